"""Per-series memory peaks and OOM kills (upstream ContainerState), vectorised.

Each series keeps one peak per memory interval: the first sample opens an
interval ending `interval` later; a larger sample inside it replaces the peak
(the old one is subtracted from the aggregate's histogram, the new one added,
both stamped with the interval end); a sample at or past the end moves the end
forward by whole intervals. Those ends form a grid anchored at the current end,
so a batch splits into (series, interval) groups that each reduce to one peak.
The histograms themselves live with the aggregates: every method here returns
the `PeakChanges` for the caller to apply.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.vpa.estimators import to_amount
from recommender.vpa.ingest import Segments
from recommender.vpa.settings import ZERO_TIME


@dataclass(frozen=True)
class PeakChanges:
    """Peaks to remove from and add to the histograms: (series, bytes, interval end)."""

    removed: tuple[np.ndarray, np.ndarray, np.ndarray]
    added: tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class PeakGroups:
    """One entry per (series, memory interval) touched by a batch."""

    series: np.ndarray  # int64
    window_end: np.ndarray  # int64, end of the interval (the peak's timestamp)
    opens: np.ndarray  # bool, True: a new interval (False: continues the current one)
    first_value: np.ndarray  # float64, first sample of the group
    peak: np.ndarray  # float64, largest sample of the group
    last_of_series: np.ndarray  # bool, the series' final group in this batch


def memory_peak_groups(
    series: np.ndarray,
    times: np.ndarray,
    values: np.ndarray,
    window_end: np.ndarray,
    fresh: np.ndarray,
    interval: int,
) -> PeakGroups:
    """Split accepted memory samples (grouped by series, times non-decreasing) by interval.

    window_end / fresh are per-series state: the current interval's end and
    whether the series has never had a memory sample. A fresh series' first
    sample opens an interval ending `interval` after it; later samples at or past
    the end move it forward by whole intervals.
    """
    segments = Segments.of(series)
    n = series.shape[0]
    row_segment = segments.segment_of_rows(n)
    seg_series = segments.series
    anchor = np.where(fresh[seg_series], times[segments.starts] + interval, window_end[seg_series])
    row_anchor = anchor[row_segment]
    late = times >= row_anchor
    index = np.where(late, (times - row_anchor) // interval + 1, 0)
    boundary = np.empty(n, dtype=bool)
    if n:
        boundary[0] = True
        np.not_equal(index[1:], index[:-1], out=boundary[1:])
    boundary[segments.starts] = True
    starts = np.flatnonzero(boundary)
    group_series = series[starts].astype(np.int64)
    group_index = index[starts]
    last_of_series = np.zeros(starts.size, dtype=bool)
    if starts.size:
        last_of_series[:-1] = group_series[1:] != group_series[:-1]
        last_of_series[-1] = True
    return PeakGroups(
        series=group_series,
        window_end=anchor[row_segment[starts]] + group_index * interval,
        opens=(group_index > 0) | fresh[group_series],
        first_value=values[starts],
        peak=np.maximum.reduceat(values, starts) if n else values[:0],
        last_of_series=last_of_series,
    )


class MemoryPeaks:
    """Interval end, usage peak and OOM peak per series, plus its newest memory time."""

    def __init__(
        self, n_series: int, interval: int, oom_min_bump: float, oom_bump_ratio: float
    ) -> None:
        self.interval = interval
        # per series: a VPA's containerPolicies may set its own (upstream's AEP-8026)
        self.oom_min_bump = np.full(n_series, float(oom_min_bump))
        self.oom_bump_ratio = np.full(n_series, float(oom_bump_ratio))
        self.last_time = np.full(n_series, ZERO_TIME, dtype=np.int64)
        self.window_end = np.full(n_series, ZERO_TIME, dtype=np.int64)
        self.usage_peak = np.zeros(n_series)
        self.oom_peak = np.zeros(n_series)

    def observe(self, series: np.ndarray, t: np.ndarray, used: np.ndarray) -> PeakChanges:
        """Accepted usage samples, grouped by series with non-decreasing times."""
        segments = Segments.of(series)
        self.last_time[segments.series] = t[segments.ends(series.size)]
        groups = memory_peak_groups(
            series, t, used, self.window_end, self.window_end == ZERO_TIME, self.interval
        )
        held = np.maximum(self.usage_peak[groups.series], self.oom_peak[groups.series])
        # Upstream only replaces a non-zero peak, and an interval opened at 0 stays 0.
        replaces = ~groups.opens & (held != 0) & (groups.peak > held)
        opening_peak = np.where(groups.first_value == 0, 0.0, groups.peak)
        grows = groups.opens | replaces
        changes = PeakChanges(
            removed=(groups.series[replaces], held[replaces], groups.window_end[replaces]),
            added=(
                groups.series[grows],
                np.where(groups.opens, opening_peak, groups.peak)[grows],
                groups.window_end[grows],
            ),
        )
        self.usage_peak[groups.series[replaces]] = groups.peak[replaces]
        last = groups.last_of_series
        self.window_end[groups.series[last]] = groups.window_end[last]
        reopened = last & groups.opens
        self.usage_peak[groups.series[reopened]] = opening_peak[reopened]
        self.oom_peak[groups.series[reopened]] = 0.0
        return changes

    def record_oom(self, series: np.ndarray, t: np.ndarray, request: np.ndarray) -> PeakChanges:
        """At most one OOM per series: upstream RecordOOM + addMemorySample(isOOM=True).

        The kill counts as a peak of max(used + min bump, used * ratio), where used
        = max(request, usage peak). It is processed even when older than the last
        sample (and moves the last time back, as upstream), but dropped when it
        is before the current interval.
        """
        interval = self.interval
        keep = t >= self.window_end[series] - interval
        series, t, request = series[keep], t[keep], request[keep]
        request = to_amount(np.ceil(np.nan_to_num(request, nan=0.0)))
        used = np.maximum(request, self.usage_peak[series])
        needed = np.maximum(
            used + to_amount(self.oom_min_bump[series]),
            to_amount(used * self.oom_bump_ratio[series]),
        )
        self.last_time[series] = t
        end = self.window_end[series]
        end = np.where(end == ZERO_TIME, t, end)
        inside = t < end
        held = np.maximum(self.usage_peak[series], self.oom_peak[series])
        replaces = inside & (held != 0) & (needed > held)
        new_end = np.where(inside, end, end + (t - end) // interval * interval + interval)
        grows = replaces | ~inside
        self.window_end[series] = new_end
        self.usage_peak[series[~inside]] = 0.0
        self.oom_peak[series[grows]] = needed[grows]
        return PeakChanges(
            removed=(series[replaces], held[replaces], end[replaces]),
            added=(series[grows], needed[grows], new_end[grows]),
        )

    def in_progress(self, now: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Series whose interval is still running at `now`: (series, held peak, interval end)."""
        series = np.flatnonzero((self.window_end != ZERO_TIME) & (self.window_end > now))
        held = np.maximum(self.usage_peak[series], self.oom_peak[series])
        return series, held, self.window_end[series]
