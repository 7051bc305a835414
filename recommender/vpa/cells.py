"""The non-zero cells of a histogram matrix, for reading it at the cost of its content.

A row of the (aggregates, buckets) weight matrix holds a few dozen non-zero CPU
buckets and one or two memory buckets out of 176, as upstream's Go histogram touches
only its buckets between the lowest and highest non-empty one. Percentiles and
checkpoint weights read here walk those cells only: one pass over the dense matrix
finds them, and the rest costs in proportion to what the histograms hold. Sums run
cell by cell in bucket order, as upstream's loop adds, so every comparison with a
threshold is the Go binary's, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Cells per chunk of the padded running-sum matrix (8 MB of float64).
_PADDED_CELLS = 1 << 20


@dataclass(frozen=True)
class Cells:
    """Non-zero cells in row-major order: row, bucket, weight; `bounds[r]:bounds[r + 1]`
    are row r's cells."""

    rows: np.ndarray
    buckets: np.ndarray
    weights: np.ndarray
    bounds: np.ndarray
    n_buckets: int

    @classmethod
    def of(cls, weights: np.ndarray) -> Cells:
        n_rows, n_buckets = weights.shape
        flat = np.flatnonzero(weights > 0)
        rows = flat // n_buckets
        bounds = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=bounds[1:])
        return cls(rows, flat - rows * n_buckets, weights.reshape(-1)[flat], bounds, n_buckets)

    @property
    def n_rows(self) -> int:
        return int(self.bounds.shape[0] - 1)

    def heavy_span(self, epsilon: float) -> Span:
        """Per row, its cells from the first to the last holding at least epsilon."""
        heavy = np.flatnonzero(self.weights >= epsilon)
        if heavy.size == self.weights.size:  # the usual case: every row's cells, whole
            return Span(self, self.bounds[:-1], np.diff(self.bounds), whole=True)
        first = self.bounds[:-1].copy()
        length = np.zeros(self.n_rows, dtype=np.int64)
        if heavy.size:
            rows = self.rows[heavy]
            starts = np.flatnonzero(np.diff(rows, prepend=-1))
            ends = np.append(starts[1:], rows.size) - 1
            first[rows[starts]] = heavy[starts]
            length[rows[starts]] = heavy[ends] - heavy[starts] + 1
        return Span(self, first, length)


@dataclass(frozen=True)
class Span:
    """Each row's run of cells `first[r] : first[r] + length[r]` (length 0: empty row);
    `whole` when every row's run is all its cells."""

    cells: Cells
    first: np.ndarray
    length: np.ndarray
    whole: bool = False

    @property
    def nonempty(self) -> np.ndarray:
        return self.length > 0

    def bucket_range(self) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) bucket per row; (0, last bucket) for an empty row."""
        buckets = self.cells.buckets
        if buckets.size == 0:
            return np.zeros_like(self.first), np.full_like(self.first, self.cells.n_buckets - 1)
        last = self.first + self.length - 1
        lowest = np.where(self.nonempty, buckets[np.minimum(self.first, buckets.size - 1)], 0)
        highest = np.where(self.nonempty, buckets[np.clip(last, 0, None)], self.cells.n_buckets - 1)
        return lowest, highest

    def cells_below(self, thresholds: np.ndarray) -> np.ndarray:
        """For each threshold row (k, rows): how many leading cells of a row's span keep
        its running sum below the threshold, i.e. the index (within the span) of the cell
        where the sum first reaches it; the span's length if it never does.

        The spans are laid side by side in a (rows, longest span) matrix, zero-padded,
        and summed along each row by `np.cumsum`, which adds left to right one cell at a
        time (no pairwise summation): the running sums are upstream's, bit for bit. Rows
        go in chunks of about `_PADDED_CELLS` cells, so temporaries stay small.
        """
        rows = self.first.shape[0]
        below = np.zeros(thresholds.shape, dtype=np.int64)
        longest = int(self.length.max()) if rows else 0
        if longest == 0:
            return below
        weights = np.append(self.cells.weights, 0.0)  # the padding cell
        offsets = np.arange(longest + 1)  # one padding column at least: argmax finds it
        chunk = max(1, _PADDED_CELLS // (longest + 1))
        for low in range(0, rows, chunk):
            part = slice(low, low + chunk)
            inside = offsets[None, :] < self.length[part, None]
            index = np.where(inside, self.first[part, None] + offsets[None, :], weights.size - 1)
            running = np.cumsum(weights[index], axis=1)
            for k in range(thresholds.shape[0]):
                reached = (running >= thresholds[k, part, None]) | ~inside
                below[k, part] = reached.argmax(axis=1)
        return below

    def bucket_at(self, index: np.ndarray, otherwise: np.ndarray) -> np.ndarray:
        """The bucket of each row's span cell number `index` ((k, rows)); `otherwise`
        where the span is shorter."""
        buckets = self.cells.buckets
        if buckets.size == 0:
            return np.broadcast_to(otherwise, index.shape).copy()
        at = np.minimum(self.first + index, buckets.size - 1)
        return np.where(index < self.length, buckets[at], otherwise)
