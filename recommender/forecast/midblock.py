"""Mid-block moves off the plan: following a lull down, handing a spike's cores back.

Lulls: a batch job ending early in a block would keep its busy request, and the next block's
plan must still cover a job that may start any minute. Following the job is cheaper:
after a few idle windows the request drops to what idle needs, and the next job start
is answered by a reaction restoring the busy level, as long as the budget keeps a change
for that restore and the drop saves a real share of the peak.

Spikes: a raise for a serving container's burst of minutes would otherwise stay until a
boundary's plan lowers it, often longer, since the reaction spent the change the decrease
needed. So once usage has stayed at or below the level from before the reaction for a
few windows, the request returns there, if the budget keeps a change for the next
reaction and it saves enough.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.forecast.margins import LEVEL_EDGES
from recommender.forecast.quantiles import error_quantiles
from recommender.forecast.settings import LullSettings, SpikeSettings


def _idle_busy(cpu: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Idle and busy windows of `cpu` relative to the recent peak `scale`, by the level
    edges of `margins` (missing windows are neither)."""
    column = scale.reshape((-1,) + (1,) * (cpu.ndim - 1))
    return cpu < LEVEL_EDGES[1] * column, cpu >= LEVEL_EDGES[2] * column


def idle_requests(
    cpu: np.ndarray, scale: np.ndarray, quantile: float, margin: float, floor: float
) -> np.ndarray:
    """What an idle spell needs per series: a high quantile of its idle windows, plus
    margin (NaN without an idle window)."""
    idle, _ = _idle_busy(cpu, scale)
    level, _ = error_quantiles(np.where(idle, cpu, np.nan), (quantile,))
    return np.maximum(level[:, 0] * (1.0 + margin), floor)


def lull_shortfall_rate(
    cpu: np.ndarray, scale: np.ndarray, following: np.ndarray, windows_per_start: int
) -> float:
    """Share of all windows that following lulls will leave short (taken off the target the
    margins spend): every job start of a following series (idle, then clearly busy) costs
    `windows_per_start` windows before the reaction lands."""
    idle, busy = _idle_busy(cpu, scale)
    starts = idle[:, :-1] & busy[:, 1:]
    seen = np.sum(~np.isnan(cpu))
    short = np.sum(starts[following]) * windows_per_start
    return float(short / seen) if seen else 0.0


def _due(run, saving, left, scale, rule: LullSettings | SpikeSettings) -> np.ndarray:
    """A drop or release the rule allows: long enough, worth it, and a change to spare."""
    return (
        (left >= rule.reserve + 1)
        & (run >= rule.after_windows)
        & (saving >= rule.min_saving * scale)
    )


@dataclass
class LullTracker:
    """Per series: how long usage has been idle, and the level to restore after a drop."""

    idle_run: np.ndarray  # consecutive idle windows up to now
    dropped_from: np.ndarray  # request before a drop still in force; NaN = none

    @classmethod
    def empty(cls, n: int) -> LullTracker:
        return cls(np.zeros(n, dtype=np.int64), np.full(n, np.nan))

    def observe(self, cpu: np.ndarray, scale: np.ndarray) -> None:
        idle, _ = _idle_busy(cpu, scale)
        self.idle_run = np.where(idle, self.idle_run + 1, 0)

    def drop(
        self,
        request: np.ndarray,
        idle: np.ndarray,
        may: np.ndarray,
        left: np.ndarray,
        scale: np.ndarray,
        settings: LullSettings,
    ) -> np.ndarray:
        """Which series that `may` drop from `request` to their `idle` one now (bool, series),
        each remembering the level to restore (the conditions: `LullSettings`)."""
        due = _due(self.idle_run, request - idle, left, scale, settings)
        dropped = may & due & np.isnan(self.dropped_from)
        self.dropped_from = np.where(dropped, request, self.dropped_from)
        return dropped

    def restore_level(
        self, wanted: np.ndarray, seen: np.ndarray, scale: np.ndarray, ceiling: np.ndarray
    ) -> np.ndarray:
        """A job starting after a drop gets its busy level at once (a small blip does not)."""
        _, busy = _idle_busy(seen, scale)
        restore = ~np.isnan(self.dropped_from) & busy
        return np.where(restore, np.fmax(wanted, np.fmin(self.dropped_from, ceiling)), wanted)


@dataclass
class SpikeTracker:
    """Per series: the request before a reaction still in force, and how calm usage has been."""

    raised_from: np.ndarray  # request before the reaction; NaN = no raise outstanding
    calm_run: np.ndarray  # consecutive windows at or below `raised_from`
    released: np.ndarray  # bool: back at the pre-reaction level, no plan raise until busy

    @classmethod
    def empty(cls, n: int) -> SpikeTracker:
        return cls(np.full(n, np.nan), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool))

    def observe(self, cpu: np.ndarray) -> None:
        """Count calm windows: usage the level a release returns to covers (above it, by
        however little, would be short every window after a release, never answered)."""
        calm = cpu <= self.raised_from  # NaN level or NaN usage: not calm
        self.calm_run = np.where(calm, self.calm_run + 1, 0)

    def record_raises(self, raised: np.ndarray, before: np.ndarray) -> None:
        """A reaction raised `raised` rows; the first level of a burst is the one kept."""
        first = raised & np.isnan(self.raised_from)
        self.raised_from = np.where(first, before, self.raised_from)
        self.calm_run = np.where(raised, 0, self.calm_run)
        self.released &= ~raised

    def release(
        self,
        current: np.ndarray,
        may: np.ndarray,
        left: np.ndarray,
        scale: np.ndarray,
        settings: SpikeSettings,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Which series that `may` return from `current` to their pre-reaction request now
        (bool, series), and that request (the conditions: `SpikeSettings`)."""
        released = (
            may
            & settings.release
            & _due(self.calm_run, current - self.raised_from, left, scale, settings)
        )
        before = self.raised_from
        self.released |= released
        self.raised_from = np.where(released, np.nan, before)
        return released, before

    def at_boundary(self, planned: np.ndarray) -> None:
        """A block boundary passed: rows the plan moved (`planned`, bool) have no reaction
        outstanding any more, and no release holds back the plan beyond this one."""
        self.raised_from[planned] = np.nan
        self.released[:] = False
