"""Upstream's eviction rate limit (`--eviction-rate-limit`, `--eviction-rate-burst`).

A token bucket shared by every pass of a running updater: `rate` evictions per second
on average, at most `burst` at once. Upstream's updater blocks until a token comes;
ours leaves the pod for a later pass, so a pass never stalls on the limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class EvictionRate:
    """Tokens refill at `rate` per second up to `burst`; `rate` <= 0 means no limit."""

    def __init__(
        self, rate: float, burst: int = 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate > 0 and burst < 1:
            raise ValueError("an eviction rate limit needs a burst of at least 1")
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = float(burst)
        self.last = clock()

    @property
    def limited(self) -> bool:
        return self.rate > 0

    def take(self) -> bool:
        """One eviction's token, if there is one now."""
        if not self.limited:
            return True
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def refusal(self) -> str | None:
        """Why this eviction waits (None: it may go, and its token is spent)."""
        if self.take():
            return None
        return (
            f"eviction rate limit reached ({self.rate:g} per second, burst {self.burst}); "
            "left for a later pass"
        )
