"""The model's feed from a history sorted by series: its rows in time order, stretch by
stretch, without sorting the history by time (pure).

Upstream's recommender sees samples as they arrive, in time order, and `fit_vpa_model`
feeds the model so: the history's rows in time order (ties in row order), cut into
stretches, each taken grouped by series (`VpaModel.add_chunks`). A history read from
Prometheus, a file or the service's cache is sorted by series and time instead, and
sorting its rows by time and gathering four columns in that order was half of the
refit at 10,000 containers x 8 days (23 million rows). Here no row is sorted: a stretch
of the time order holds, of each series, one run of its rows, and grouped by series those
runs come in the history's own row order. So each stretch's rows are found by counting
the rows per time once and one binary search per series at each cut, and gathered from
runs that lie in memory in order. The rows and their order are exactly the sort's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from recommender.data.columnar import run_rows
from recommender.vpa.ingest import Chunk

MOST_TIMES_PER_ROW = 4  # a time grid larger than this many points per row is not counted


@dataclass(frozen=True)
class SeriesSorted:
    """A history sorted by series then time: each series' rows one run (series numbered in
    run order), its times on a grid of `grid`-second slots from `first`."""

    series: np.ndarray  # int64 per row, non-decreasing
    seconds: np.ndarray  # int64 per row
    cpu: np.ndarray
    memory: np.ndarray
    first: int  # the earliest time
    grid: int  # every time is first + a multiple of it
    slots: int  # grid slots from first to the last time
    counted: np.ndarray  # int64 per slot: rows at or before it
    runs: np.ndarray  # int64 (series, 3): first row, row after the last, slot of the first
    # where a series has one row at each slot from its first to its last: its rows need no
    # search; the others' are searched in `key` (series * slots + slot per row, sorted)
    dense: np.ndarray
    key: np.ndarray | None

    @classmethod
    def of(
        cls, series: np.ndarray, seconds: np.ndarray, cpu: np.ndarray, memory: np.ndarray
    ) -> SeriesSorted | None:
        """The history's runs, or None when it is not sorted so (or its times span too many
        grid points to count): the caller then sorts by time."""
        rows = series.size
        if rows == 0 or int(series.min()) < 0:
            return None
        first = int(seconds.min())
        slot = seconds - first
        grid = max(int(np.gcd.reduce(slot)), 1)
        np.floor_divide(slot, grid, out=slot)
        slots = int(slot.max()) + 1
        if slots > MOST_TIMES_PER_ROW * rows + 1024 or (int(series.max()) + 1) * slots >= 2**62:
            return None
        key = series * slots
        key += slot
        steps = key[1:] - key[:-1]
        if bool((steps < 0).any()):  # not by series, or a series' times out of order
            return None
        starts = np.flatnonzero(series[1:] != series[:-1]) + 1
        starts = np.concatenate([[0], starts]).astype(np.int64)
        if not np.array_equal(series[starts], np.arange(starts.size)):
            return None  # a series number without rows
        ends = np.append(starts[1:], rows)
        first_slot = slot[starts]
        odd = np.flatnonzero(steps != 1) + 1  # rows not one slot after the row before
        del steps
        odd = odd[series[odd] == series[odd - 1]]  # ... within their series: a gap or a repeat
        dense = np.ones(starts.size, bool)
        dense[series[odd]] = False
        counted = np.cumsum(np.bincount(slot, minlength=slots))
        runs = np.stack([starts, ends, first_slot], axis=1)
        kept = None if dense.all() else key
        return cls(series, seconds, cpu, memory, first, grid, slots, counted, runs, dense, kept)

    @property
    def rows(self) -> int:
        return int(self.series.size)

    @property
    def span(self) -> tuple[int, int]:
        """The earliest and the latest time."""
        return self.first, self.first + (self.slots - 1) * self.grid

    def rows_until(self, seconds: np.ndarray) -> np.ndarray:
        """How many rows have a time at or before each of `seconds` (the time order's
        `searchsorted(..., side="right")`)."""
        slot = (np.asarray(seconds, dtype=np.int64) - self.first) // self.grid
        inside = self.counted[np.clip(slot, 0, self.slots - 1)]
        return np.where(slot < 0, 0, np.where(slot >= self.slots, self.rows, inside))

    def chunks(self, begin: int, end: int, size: int) -> Iterator[Chunk]:
        """Rows `begin` to `end` of the time order, `size` at a time, each chunk grouped by
        series (a series' rows in time order, as the stable sort then grouping gives)."""
        low = self._cut(begin)
        for at in range(begin, end, size):
            high = self._cut(min(at + size, end))
            lengths = high - low
            rows = run_rows(low, lengths)
            series = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
            seconds, cpu = np.take(self.seconds, rows), np.take(self.cpu, rows)
            yield series, seconds, cpu, np.take(self.memory, rows)
            low = high

    def _cut(self, rank: int) -> np.ndarray:
        """Per series, the row where its part of the first `rank` rows of the time order
        ends: all its rows before the time of row `rank`, and of the rows at that time the
        first ones (in row order) up to `rank`."""
        starts, ends, first_slot = self.runs.T
        if rank <= 0:
            return starts.copy()
        if rank >= self.rows:
            return ends.copy()
        slot = int(np.searchsorted(self.counted, rank, side="right"))
        before = int(self.counted[slot - 1]) if slot else 0
        # rows before the slot, and at it
        low = starts + np.clip(slot - first_slot, 0, ends - starts)
        ties = ((slot >= first_slot) & (low < ends)).astype(np.int64)
        if self.key is not None:
            searched = np.flatnonzero(~self.dense)
            target = searched * self.slots + slot
            low[searched] = np.searchsorted(self.key, target, side="left")
            ties[searched] = np.searchsorted(self.key, target, side="right") - low[searched]
        earlier = np.cumsum(ties) - ties  # rows at the slot in the series before each
        return low + np.clip(rank - before - earlier, 0, ties)


@dataclass(frozen=True)
class TimeSorted:
    """Any history's rows sorted by time (stable): the feed of one not sorted by series."""

    series: np.ndarray
    seconds: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray

    @classmethod
    def of(
        cls, series: np.ndarray, seconds: np.ndarray, cpu: np.ndarray, memory: np.ndarray
    ) -> TimeSorted:
        order = np.argsort(seconds, kind="stable")
        return cls(series[order], seconds[order], cpu[order], memory[order])

    @property
    def rows(self) -> int:
        return int(self.series.size)

    @property
    def span(self) -> tuple[int, int]:
        return int(self.seconds[0]), int(self.seconds[-1])

    def rows_until(self, seconds: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.seconds, seconds, side="right")

    def chunks(self, begin: int, end: int, size: int) -> Iterator[Chunk]:
        """Rows `begin` to `end`, `size` at a time (the model groups each by series)."""
        for at in range(begin, end, size):
            rows = slice(at, min(at + size, end))
            yield self.series[rows], self.seconds[rows], self.cpu[rows], self.memory[rows]
