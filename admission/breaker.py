"""A circuit breaker for the API calls left in the admission path.

Reviews are read from the informer cache; the only call that remains is the read of
a controller the watch has not delivered yet (a ReplicaSet created a moment before
its pods). That call gets a short request timeout, and after a few failures in a row
the breaker opens: for `cooldown` seconds no call is made at all and the review is
answered from what the cache has, so a frozen or dead API server costs each review
nothing rather than a timeout. Then one call at a time is let through (half-open);
its success closes the breaker.

Hand-written: the Python breaker packages (pybreaker, circuitbreaker) are sync
decorators without a half-open limit or a clock a test can drive; this one is a
few lines over a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class BreakerOpen(Exception):
    """The breaker is open: the call was not made."""


class CircuitBreaker:
    """Counts failures in a row; `failures` of them open it for `cooldown` seconds."""

    def __init__(
        self,
        failures: int = 3,
        cooldown: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        on_open: Callable[[], None] | None = None,
    ) -> None:
        self.threshold, self.cooldown, self.clock = failures, cooldown, clock
        self.on_open = on_open
        self._lock = threading.Lock()
        self._failures = 0
        self._open_until = 0.0
        self._probing = False

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._failures >= self.threshold and self.clock() < self._open_until

    def call(
        self,
        function: Callable[[], T],
        failure: type[Exception] | tuple[type[Exception], ...] = Exception,
    ) -> T:
        """`function()` unless the breaker is open (BreakerOpen); `failure` exceptions count."""
        with self._lock:
            if self._failures >= self.threshold:
                if self.clock() < self._open_until or self._probing:
                    raise BreakerOpen("the API server failed repeatedly; not asked for now")
                self._probing = True  # half-open: this call alone tries
        try:
            result = function()
        except failure:
            self._failed()
            raise
        except BaseException:
            with self._lock:
                self._probing = False
            raise
        with self._lock:
            self._failures, self._probing = 0, False
        return result

    def _failed(self) -> None:
        with self._lock:
            self._failures += 1
            self._probing = False
            opened = self._failures >= self.threshold
            if opened:
                self._open_until = self.clock() + self.cooldown
        if opened and self.on_open is not None:
            self.on_open()
