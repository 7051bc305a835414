"""Memory sizing: a memory limit that is too low kills the container.

So memory is never sized from a forecast mean the way CPU can be: the level
covers the highest peak of the recent past plus a margin, an OOM kill raises it
at once and holds it there, and a decrease needs the recent peaks to have stayed
clearly below the level it leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from recommender.forecast.settings import HOUR, ForecastSettings


@dataclass
class OomHistory:
    """What the OOM kills of each series imply, arrays of shape (series,).

    floor: memory the limit may not go below (bytes; 0 = none).
    hold_until: UNIX seconds until which the floor holds.
    count: OOM kills seen; last: UNIX seconds of the last one (NaN = never).
    """

    floor: np.ndarray
    hold_until: np.ndarray
    count: np.ndarray
    last: np.ndarray = field(repr=False)

    @classmethod
    def empty(cls, n: int) -> OomHistory:
        return cls(
            np.zeros(n), np.full(n, -np.inf), np.zeros(n, dtype=np.int64), np.full(n, np.nan)
        )

    def record(
        self, rows: np.ndarray, seconds: np.ndarray, memory: np.ndarray, settings: ForecastSettings
    ) -> None:
        """OOM kills of `rows` at `seconds` with `memory` in use (bytes): bump and hold."""
        for row, when, used in zip(rows.tolist(), seconds.tolist(), memory.tolist(), strict=True):
            bumped = bump_after_oom(np.array([used]), settings)[0]
            holding = when < self.hold_until[row]
            base = self.floor[row] if holding else 0.0
            self.floor[row] = max(base, bumped)
            self.hold_until[row] = max(self.hold_until[row], when + settings.oom_hold_hours * HOUR)
            self.count[row] += 1
            self.last[row] = when if np.isnan(self.last[row]) else max(self.last[row], when)

    def floor_at(self, seconds: float) -> np.ndarray:
        """The floor in force at `seconds` (0 where no hold is active)."""
        return np.where(self.hold_until > seconds, self.floor, 0.0)


def bump_after_oom(memory: np.ndarray, settings: ForecastSettings) -> np.ndarray:
    """The limit right after a kill at `memory`: max(memory * factor, memory + minimum)."""
    return np.maximum(memory * settings.oom_bump_factor, memory + settings.oom_bump_min_bytes)


def recent_peak(memory: np.ndarray, windows: int) -> np.ndarray:
    """Largest sample of the last `windows` windows per series, NaN when none."""
    recent = memory[:, -windows:] if windows < memory.shape[1] else memory
    peak = np.max(np.where(np.isnan(recent), -np.inf, recent), axis=1, initial=-np.inf)
    return np.where(np.isneginf(peak), np.nan, peak)


def memory_level(
    memory: np.ndarray, step: int, now: float, ooms: OomHistory, settings: ForecastSettings
) -> np.ndarray:
    """The memory request (= limit) each series needs now, bytes (series,); NaN = unknown."""
    windows = max(1, round(settings.memory_peak_hours * HOUR / step))
    level = recent_peak(memory, windows) * (1.0 + settings.memory_margin)
    level = np.fmax(level, ooms.floor_at(now))
    level = np.where(level > 0, np.maximum(level, settings.min_memory_bytes), level)
    return np.where(np.isnan(recent_peak(memory, memory.shape[1])), np.nan, level)
