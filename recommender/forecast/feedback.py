"""Closing the loop on the shortfall target.

Margins are calibrated on a replay that cannot see everything the live policy
does (hysteresis keeps requests higher, an exhausted change budget keeps them
lower), so the shortfall the fleet actually gets drifts from the target. The
live strategy counts its own shortfall windows and scales the target it asks
the planner for, slowly (a full correction takes about a day), within bounds:
the error-budget loop an SRE would run by hand.
"""

from __future__ import annotations

import numpy as np

from recommender.forecast.settings import DAY

WINDOW_DAYS = 2.0  # realised rate measured over this trailing span
MIN_JUDGED_DAYS = 1.0  # fleet container-days needed before correcting
GAIN_BOUNDS = (0.25, 2.0)


class ShortfallFeedback:
    """Fleet shortfall windows per update period, and the gain on the target."""

    def __init__(self, period: int, containers: int) -> None:
        self.period = period
        self.containers = containers
        slots = max(1, round(WINDOW_DAYS * DAY / period))
        self.shortfalls = np.zeros(slots)
        self.judged = np.zeros(slots)
        self.slot = 0
        self.gain = 1.0

    def record(self, usage: np.ndarray, request: np.ndarray) -> None:
        """One window: CPU usage and the request that was in force (NaN = none)."""
        seen = ~np.isnan(usage) & ~np.isnan(request)
        self.shortfalls[self.slot] += np.count_nonzero(seen & (usage > request))
        self.judged[self.slot] += np.count_nonzero(seen)

    def update(self, target: float, windows_per_period: int) -> float:
        """At a block boundary: move the gain towards target / realised; return it."""
        judged = self.judged.sum()
        needed = MIN_JUDGED_DAYS * DAY / self.period * windows_per_period
        if judged >= needed and target > 0:
            realised = self.shortfalls.sum() / judged
            ratio = target / max(realised, target / 4.0)
            step = self.period / DAY
            self.gain = float(np.clip(self.gain * ratio**step, *GAIN_BOUNDS))
        self.slot = (self.slot + 1) % len(self.shortfalls)
        self.shortfalls[self.slot] = 0.0
        self.judged[self.slot] = 0.0
        return self.gain
