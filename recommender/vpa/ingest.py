"""Grouping a batch by series and upstream's "drop out-of-order samples" rule.

Upstream feeds samples one by one into per-container state machines. Here a
batch is grouped by series (keeping each series' own order) and the ordering
rule, "newer than everything the series saw before", becomes a running maximum
restarted at every series.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class VpaInputError(ValueError):
    """Samples, kills or indices the model cannot take (wrong shape, range or value)."""


def checked_indices(values: object, size: int | None, what: str) -> np.ndarray:
    """Whole numbers in [0, size) as int64 (size None: no upper bound): a float index
    used to be truncated and -1 silently meant the last series."""
    array = np.asarray(values)
    if array.dtype.kind == "f" and not np.array_equal(array, np.trunc(array)):
        raise VpaInputError(f"{what} indices must be whole numbers")
    if array.dtype.kind not in "iuf" and array.size:
        raise VpaInputError(f"{what} indices must be numbers, got {array.dtype}")
    indices = array.astype(np.int64, copy=False)
    if indices.size and size is None and indices.min() < 0:
        raise VpaInputError(f"{what} indices must be >= 0")
    if indices.size and size is not None and (indices.min() < 0 or indices.max() >= size):
        raise VpaInputError(f"{what} index out of range [0, {size})")
    return indices


def checked_times(values: object, what: str = "t") -> np.ndarray:
    """UNIX seconds as int64; NaN or infinite times are refused, not cast to garbage."""
    array = np.asarray(values)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise VpaInputError(f"{what} must be finite UNIX seconds")
    return array.astype(np.int64, copy=False)


def checked_amounts(values: object, what: str) -> np.ndarray:
    """Usage or requests as float64: NaN means missing; infinite or negative is refused
    (an inf sample used to land in the last bucket and recommend 1000+ cores)."""
    array = np.asarray(values, dtype=np.float64)
    # two reductions that skip NaN and allocate nothing: this runs on every ingested sample
    lowest = np.fmin.reduce(array) if array.size else np.nan  # NaN: every value missing
    if not np.isnan(lowest) and not (lowest >= 0 and np.fmax.reduce(array) < np.inf):
        raise VpaInputError(f"{what} must be finite and >= 0 (NaN: missing)")
    return array


Chunk = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # series, t, cpu, memory


def checked_chunk(series: object, t: object, cpu: object, memory: object, *, size: int) -> Chunk:
    """Samples as the model takes them: `series` indices below `size`, times, cpu and
    memory amounts, all 1-D of one length."""
    series = checked_indices(series, size, "series")
    t = checked_times(t)
    cpu = checked_amounts(cpu, "cpu")
    memory = checked_amounts(memory, "memory")
    if not series.shape == t.shape == cpu.shape == memory.shape or series.ndim != 1:
        raise VpaInputError("series, t, cpu and memory must be 1-D arrays of one length")
    return series, t, cpu, memory


def kept_rows(kept: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, ...]:
    """The kept rows of each column (no copy when every row is kept)."""
    if bool(kept.all()):
        return columns
    return tuple(column[kept] for column in columns)


@dataclass(frozen=True)
class Segments:
    """Rows grouped by series: where each series' run starts and which series it is."""

    starts: np.ndarray  # int64 (segments,)
    series: np.ndarray  # int64 (segments,)
    row_segment: np.ndarray | None  # int64 (rows,) segment of each row, built lazily

    @classmethod
    def of(cls, series: np.ndarray) -> Segments:
        n = series.shape[0]
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty)
        boundary = np.empty(n, dtype=bool)
        boundary[0] = True
        np.not_equal(series[1:], series[:-1], out=boundary[1:])
        starts = np.flatnonzero(boundary)
        return cls(starts, series[starts].astype(np.int64), None)

    def segment_of_rows(self, n_rows: int) -> np.ndarray:
        if self.row_segment is not None:
            return self.row_segment
        lengths = np.diff(np.append(self.starts, n_rows))
        return np.repeat(np.arange(self.starts.size, dtype=np.int64), lengths)

    def ends(self, n_rows: int) -> np.ndarray:
        """Index of the last row of each segment."""
        return np.append(self.starts[1:], n_rows) - 1


def group_by_series(series: np.ndarray) -> np.ndarray | None:
    """A stable permutation that groups rows by series, or None when already grouped.

    Already-grouped input (any series order, each series contiguous) is the common
    case for history loads and costs one pass to detect.
    """
    n = series.shape[0]
    if n < 2:
        return None
    if np.all(series[1:] >= series[:-1]):
        return None
    smallest = int(series.min())
    span = int(series.max()) - smallest
    if span < 2**16:
        # numpy sorts 16-bit keys with a stable radix sort: linear time.
        return np.argsort((series - smallest).astype(np.uint16), kind="stable")
    if span < 2**31:
        return np.argsort((series - smallest).astype(np.int32), kind="stable")
    return np.argsort(series, kind="stable")


def accept_in_order(
    times: np.ndarray,
    present: np.ndarray,
    segments: Segments,
    last_seen: np.ndarray,
    strict: bool,
) -> np.ndarray:
    """Rows kept by upstream's ordering rule, walking each series in row order.

    A row is kept when it is present and its time is after (strict, CPU) or not
    before (memory) every earlier present row of its series and the series'
    `last_seen` time from previous batches.
    """
    n = times.shape[0]
    if n == 0:
        return np.zeros(0, dtype=bool)
    first_rows = segments.starts
    previous = last_seen[segments.series]
    start_ok = times[first_rows] > previous if strict else times[first_rows] >= previous
    if bool(start_ok.all()):
        increasing = np.empty(n, dtype=bool)
        increasing[0] = True
        np.greater(times[1:], times[:-1], out=increasing[1:])
        increasing[first_rows] = True
        if bool(increasing.all()):
            return present.copy()
    # General case: a running maximum restarted per segment by a per-segment offset.
    base = int(times.min()) - 1
    value = np.where(present, times - base, 0)
    floor_value = np.maximum(previous - base, 0)
    span = max(int(value.max()), int(floor_value.max())) + 1
    row_segment = segments.segment_of_rows(n)
    offset = row_segment * span
    key = offset + value
    running = np.maximum.accumulate(key)
    before = np.empty_like(running)
    before[0] = 0
    before[1:] = running[:-1]
    before = np.maximum(before, offset + floor_value[row_segment])
    newer = key > before if strict else key >= before
    return present & newer
