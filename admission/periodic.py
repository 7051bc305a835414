"""Work the webhook repeats in the background: the list refresh and the certificate check.

Both must outlive a bad pass and end with the process, so one helper runs them
rather than two copies of the same thread loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

LOG = logging.getLogger("tailor.admission")


class Periodic:
    """Calls `task` every `seconds` on a daemon thread, from `start()` until `stop()`.

    The first call comes one period after `start()`: callers make the first one
    themselves, while a failure can still refuse to start. An exception is logged
    with its trace as `failure` and the next call still comes.
    """

    def __init__(
        self, task: Callable[[], object], seconds: float, *, name: str, failure: str
    ) -> None:
        self.task, self.seconds, self.name, self.failure = task, seconds, name, failure
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        while not self._stop.wait(self.seconds):
            try:
                self.task()
            except Exception:  # the service outlives one bad pass
                LOG.exception(self.failure)

    def start(self) -> Periodic:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """No further call; waits (up to 10 s) for one under way."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
