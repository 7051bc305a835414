"""How low memory slack can go for a limit that never forgets a recent peak.

Issue 5's memory rule, "never schedule memory below what the recent peaks allow",
puts a floor under every limit: at window t, the peak usage of the `window`
windows before it. This module computes the least relative memory slack any
strategy obeying that floor can leave, OOM kills not even counted, so the figure
is certified for every strategy with that memory, clairvoyant ones included.

Why `max(floor, usage)` is the optimum, window by window: slack is
N / D = sum(max(r - u, 0)) / sum(r) with N <= D. Where u <= floor, raising r
adds the same amount to N and D, which never lowers N / D, so r = floor. Where
u > floor, r between the floor and u adds to D alone (lowering N / D) and above
u adds to both again, so r = u. Longer memory only raises the floor, so the
figure never falls as `window` grows (`forgetting_window` bisects on that).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class PeakFloor:
    """The least memory_relative_slack under a trailing-peak floor of `window` windows."""

    relative_slack: float
    window: int  # windows of memory the floor keeps
    windows: int  # evaluated windows (sampled, from each series' start)


class _Floors:
    """One history's evaluated windows and usage, prepared once for every floor length
    (`forgetting_window` asks for a dozen)."""

    def __init__(self, memory: np.ndarray, start: np.ndarray) -> None:
        memory = np.asarray(memory, dtype=np.float64)
        after = np.arange(memory.shape[1])[None, :] >= np.asarray(start, dtype=np.int64)[:, None]
        self.evaluated = after & ~np.isnan(memory)  # scored: sampled, from the series' start
        if not np.any(self.evaluated):
            raise ValueError("no evaluated memory usage")
        self.by_time = pd.DataFrame(memory.T)
        self.used = float(np.sum(memory, where=self.evaluated))

    def floor(self, window: int) -> PeakFloor:
        if window < 1:
            raise ValueError("the floor needs at least one window of memory")
        # the window itself and the `window` before it: max(floor, usage) in one pass
        optimum = self.by_time.rolling(window + 1, min_periods=1).max().to_numpy().T
        limit = float(np.sum(optimum, where=self.evaluated))
        slack = limit - self.used  # never negative: the optimum covers usage
        return PeakFloor(slack / max(limit, 1e-12), window, int(self.evaluated.sum()))


def trailing_peak_floor(memory: np.ndarray, start: np.ndarray, window: int) -> PeakFloor:
    """Least slack of limits never under the peak of the `window` windows before each one.

    memory: (series, windows) peak usage per window, NaN where unsampled; the
    floor reads the warm-up before `start` too, as a strategy would have.
    """
    return _Floors(memory, start).floor(window)


def forgetting_window(memory: np.ndarray, start: np.ndarray, goal: float) -> int | None:
    """The longest floor memory (in windows) whose least slack is still at most `goal`.

    None when remembering the whole history still meets `goal` (nothing need be
    forgotten); 0 when even one window of memory leaves more than `goal`.
    """
    floors = _Floors(memory, start)
    low, high = 0, int(memory.shape[1])
    if floors.floor(high).relative_slack <= goal:
        return None
    while high - low > 1:  # invariant: low meets the goal (or is 0), high does not
        middle = (low + high) // 2
        if floors.floor(middle).relative_slack <= goal:
            low = middle
        else:
            high = middle
    return low
