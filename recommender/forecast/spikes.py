"""Spikes: handing back a reaction's cores once a serving container's burst is over.

A raise for a burst of minutes would otherwise stay until a boundary's plan lowers it,
often longer, since the reaction spent the change the decrease needed. So once usage has
stayed at or below the level from before the reaction for a few windows, the request
returns there, if the budget keeps a change for the next reaction and it saves enough.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.forecast.settings import SpikeSettings


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
        """Which series return from `current` to their pre-reaction request now (bool,
        series), and that request: those that `may`, calm for `after_windows`, with
        `reserve` changes `left` for the next reaction and a saving of `min_saving` x
        `scale`."""
        released = (
            may
            & settings.release
            & (left >= settings.reserve + 1)
            & (self.calm_run >= settings.after_windows)
            & (current - self.raised_from >= settings.min_saving * scale)
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
