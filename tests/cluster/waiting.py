"""Polling helper for tests that wait on the API server or the simulator."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float = 15.0,
    interval: float = 0.1,
    what: str = "condition",
) -> T:
    """Call `probe` until it returns something truthy and return that; fail after `timeout`.

    The last value seen is put in the error, which usually says why it did not happen.
    """
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout:.0f}s; last value: {last!r}")
        time.sleep(interval)
