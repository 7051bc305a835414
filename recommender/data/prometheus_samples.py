"""A CPU counter's sample times, resets and lowest value at each grid point, read from
its raw samples (pure: no I/O).

`timestamp(x)` evaluated by query_range cost Prometheus 2.42 about 16x the bare
selector (it is evaluated step by step), and `resets` / `min_over_time` each cost as
much again as the selector. One instant query of the range selector `x[range]` returns
the stored samples themselves, with their own times (in milliseconds), for about the
cost of the bare selector when scrapes are as far apart as the step; from them, for
each series and grid point T:

- `at`: the time of the last sample at or before T, where the bare selector read by
  query_range (`presence`: Prometheus's lookback and staleness) has a value at T —
  what `timestamp(x)` answers;
- `resets`: decreases between consecutive samples in [T - step, T] — `resets(x[step])`
  on Prometheus 2 (a closed range);
- `low`: the smallest sample in [T - step, T] — `min_over_time(x[step])`;
- `floor`: `low`, or -inf where `resets` counts a decrease: all a window's average
  needs of the two (a window is clean where its floor is at least the counter at its
  start), in one grid instead of two. Collapsing several series of a container by
  their smallest floor is collapsing `resets` by the largest and `low` by the smallest.

The three come back as matrices, as the queries' answers would, so several series of
one container collapse on the grid as before. Samples older than the range asked
(`SAMPLES_MARGIN` before the first grid point) are not seen: a Prometheus whose
lookback reaches further back than that leaves those grid points without a time.
"""

from __future__ import annotations

import numpy as np

from recommender.data.prometheus_matrix import Matrix

#: seconds of samples read before a piece's first grid point: its window and lookback
SAMPLES_MARGIN = 900
#: longest range of one raw-sample query: Prometheus refuses a query holding more than
#: --query.max-samples (50 million by default) at once
SAMPLES_SPAN = 6 * 3600


def samples_range(first: int, last: int, step: int) -> int:
    """Seconds of the range selector read at `last` for the grid points first .. last."""
    return last - first + max(step, SAMPLES_MARGIN)


def counter_reads(
    samples: Matrix,
    presence: Matrix,
    first: int,
    last: int,
    step: int,
    parts: tuple[str, ...] = ("at", "resets", "low", "floor"),
) -> dict[str, Matrix]:
    """`parts` of {"at", "resets", "low", "floor"}: matrices on the grid first, first +
    step, ..., last, one series per series of `samples` (raw, times in ms), as
    `timestamp(x)`, `resets(x[step])` and `min_over_time(x[step])` read by query_range
    would answer; `presence` is the bare selector's answer on the same grid (times in
    seconds)."""
    points = (last - first) // step + 1
    grid = first + step * np.arange(points, dtype=np.int64)
    count = len(samples.labels)
    times, values = samples.times, samples.values
    starts = samples.offsets[:-1]
    series = np.repeat(np.arange(count, dtype=np.int64), samples.counts)
    base = min(int(times.min()) if times.size else 0, (first - step) * 1000)
    span = max(int(times.max()) if times.size else 0, last * 1000) - base + 1
    keys = series * span + (times - base)  # sorted: by series, then time
    asked = np.arange(count, dtype=np.int64)[:, None] * span + (grid * 1000 - base)[None, :]
    latest = np.searchsorted(keys, asked, side="right") - 1  # last sample at or before T
    earliest = np.searchsorted(keys, asked - step * 1000, side="left")  # first at/after T-step
    seen = latest >= starts[:, None]
    windowed = seen & (earliest <= latest)

    at = np.where(seen & _present(presence, samples, first, step, points), 0.0, np.nan)
    at[seen] += times[latest[seen]] / 1000.0

    fell = np.zeros(values.size, np.int64)
    fell[1:] = values[1:] < values[:-1]
    fell[starts[starts < values.size]] = 0  # a series' first sample follows no other
    fallen = np.cumsum(fell)
    resets = np.full((count, points), np.nan)
    resets[windowed] = fallen[latest[windowed]] - fallen[earliest[windowed]]

    low = np.full((count, points), np.nan)
    if windowed.any():
        bounds = np.stack([earliest[windowed], latest[windowed] + 1], axis=1).ravel()
        low[windowed] = np.fmin.reduceat(np.append(values, np.nan), bounds)[::2]
    reads = {"at": at, "resets": resets, "low": low}
    if "floor" in parts:
        reads["floor"] = np.where(resets > 0, -np.inf, low)
    return {name: _on_grid(samples.labels, grid, reads[name]) for name in parts}


def _present(presence: Matrix, samples: Matrix, first: int, step: int, points: int) -> np.ndarray:
    """Where each series of `samples` has a value in `presence` (matched by labels)."""
    if presence.labels == samples.labels:  # the same series in the same order: usual
        rows = np.arange(len(samples.labels), dtype=np.int64)
    else:
        row_of = {_key(labels): row for row, labels in enumerate(samples.labels)}
        rows = np.array([row_of.get(_key(labels), -1) for labels in presence.labels], np.int64)
    row_of_point = np.repeat(rows, presence.counts)
    offset = presence.times - first
    column = offset // step
    valid = (row_of_point >= 0) & (offset % step == 0) & (column >= 0) & (column < points)
    present = np.zeros((len(samples.labels), points), bool)
    present[row_of_point[valid], column[valid]] = True
    return present


def _key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def _on_grid(labels: list[dict[str, str]], grid: np.ndarray, read: np.ndarray) -> Matrix:
    """The numbers of `read` (series x grid points) as a matrix, NaN left out."""
    kept = ~np.isnan(read)
    offsets = np.zeros(len(labels) + 1, np.int64)
    np.cumsum(kept.sum(axis=1), out=offsets[1:])
    times = np.broadcast_to(grid, read.shape)[kept]
    return Matrix(labels, offsets, times, read[kept])
