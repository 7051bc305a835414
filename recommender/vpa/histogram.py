"""Decaying histograms for many aggregates at once: one row of bucket weights each.

Upstream keeps one Go object per histogram and walks it sample by sample; here
the state is a (aggregates, buckets) float64 matrix plus per-row total weight and
reference time, and every operation covers many rows in one numpy call.

The decay rule is upstream's: a sample at time t weighs ``w * 2**((t - ref) / H)``.
The reference time ``ref`` is a multiple of the half-life H (rounded from the
zero time, as Go's ``Time.Round``) and jumps forward to the sample's rounded time
when a sample lands more than ``max_decay_exponent`` half-lives after it; the
weights already held are then scaled by the matching power of two. Only relative
weights matter, so percentiles are unaffected by the jump.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.vpa.cells import Cells
from recommender.vpa.settings import ZERO_TIME

#: Sentinel above any real timestamp (for minimum reductions).
_FAR_FUTURE = np.iinfo(np.int64).max
#: Up to this many cells (rows x buckets) percentiles read the dense matrix, beyond it
#: only its non-zero cells (`recommender.vpa.cells`).
_DENSE_CELLS = 1 << 16


def round_to_half_life(times: np.ndarray, half_life: int) -> np.ndarray:
    """Go's ``Time.Round(halfLife)``: nearest multiple since the zero time, halves up."""
    since_zero = np.asarray(times, dtype=np.int64) - ZERO_TIME
    return ZERO_TIME + (since_zero + half_life // 2) // half_life * half_life


@dataclass
class DecayingHistograms:
    """Weights (rows, buckets), total weight (rows,) and reference time (rows,)."""

    weights: np.ndarray
    total: np.ndarray
    reference: np.ndarray
    half_life: int
    max_decay_exponent: int
    epsilon: float
    # While a batch is ingested in chunks: references before it and the span of its times.
    _batch_reference: np.ndarray | None = None
    _batch_first: np.ndarray | None = None
    _batch_last: np.ndarray | None = None

    @classmethod
    def empty(
        cls, rows: int, buckets: int, half_life: int, max_decay_exponent: int, epsilon: float
    ) -> DecayingHistograms:
        return cls(
            weights=np.zeros((rows, buckets)),
            total=np.zeros(rows),
            reference=np.full(rows, ZERO_TIME, dtype=np.int64),
            half_life=half_life,
            max_decay_exponent=max_decay_exponent,
            epsilon=epsilon,
        )

    @property
    def n_buckets(self) -> int:
        return int(self.weights.shape[1])

    def select(self, rows: np.ndarray) -> DecayingHistograms:
        """An independent copy of some rows (for export without touching the live state)."""
        return DecayingHistograms(
            weights=self.weights[rows],
            total=self.total[rows],
            reference=self.reference[rows],
            half_life=self.half_life,
            max_decay_exponent=self.max_decay_exponent,
            epsilon=self.epsilon,
        )

    def read_rows(self, rows: np.ndarray) -> DecayingHistograms:
        """Some rows, to read only: the live arrays themselves when `rows` is every row in
        order (no copy of the matrix), else `select`."""
        if np.array_equal(rows, np.arange(self.total.shape[0])):
            return DecayingHistograms(
                weights=self.weights,
                total=self.total,
                reference=self.reference,
                half_life=self.half_life,
                max_decay_exponent=self.max_decay_exponent,
                epsilon=self.epsilon,
            )
        return self.select(rows)

    def reset(self, rows: np.ndarray) -> None:
        self.weights[rows] = 0.0
        self.total[rows] = 0.0
        self.reference[rows] = ZERO_TIME

    # --- reference time -------------------------------------------------------------

    def advance_reference(
        self,
        first_time: np.ndarray,
        last_time: np.ndarray,
        row_of_sample: np.ndarray,
        sample_time: np.ndarray,
    ) -> None:
        """Move each row's reference as upstream would when these samples arrive in time order.

        first_time / last_time: per row, the earliest / latest new sample time
        (ZERO_TIME / far future where a row gets none); row_of_sample and
        sample_time list the samples themselves, needed only when one batch spans
        more than `max_decay_exponent` half-lives (several jumps).
        """
        if self._batch_first is not None and self._batch_last is not None:
            np.minimum(self._batch_first, first_time, out=self._batch_first)
            np.maximum(self._batch_last, last_time, out=self._batch_last)
        horizon = self.half_life * self.max_decay_exponent
        reference = self.reference.copy()
        has_new = last_time > ZERO_TIME
        due = has_new & (last_time > reference + horizon)
        while due.any():
            # The first sample past the horizon triggers the jump to its rounded time.
            trigger = np.full(reference.shape, _FAR_FUTURE, dtype=np.int64)
            simple = due & (first_time > reference + horizon)
            trigger[simple] = first_time[simple]
            hard = due & ~simple
            if hard.any():
                pick = hard[row_of_sample] & (sample_time > reference[row_of_sample] + horizon)
                np.minimum.at(trigger, row_of_sample[pick], sample_time[pick])
            reference[due] = round_to_half_life(trigger[due], self.half_life)
            due = has_new & (last_time > reference + horizon)
        self.rebase(reference)

    def begin_batch(self) -> None:
        """Start a batch that arrives in several chunks (see `end_batch`)."""
        self._batch_reference = self.reference.copy()
        self._batch_first = np.full(self.reference.shape, _FAR_FUTURE, dtype=np.int64)
        self._batch_last = np.full(self.reference.shape, ZERO_TIME, dtype=np.int64)

    def end_batch(self) -> None:
        """Settle on the reference that time-ordered arrival of the whole batch gives.

        Chunks move the reference in chunk order; when a row's batch needs at most
        one jump, the time-ordered result follows from the batch's earliest and
        latest times, and the weights are rebased onto it (exactly: powers of two),
        so the state does not depend on how the batch was cut. Rows needing
        several jumps within one batch keep the chunk-order reference.
        """
        start, first, last = self._batch_reference, self._batch_first, self._batch_last
        self._batch_reference = self._batch_first = self._batch_last = None
        if start is None or first is None or last is None:
            return
        horizon = self.half_life * self.max_decay_exponent
        reference = start.copy()
        touched = last > ZERO_TIME
        due = touched & (last > reference + horizon)
        jump = due & (first > reference + horizon)
        reference[jump] = round_to_half_life(first[jump], self.half_life)
        several = (due & ~jump) | (touched & (last > reference + horizon))
        self.rebase(np.where(several, self.reference, reference))

    def rebase(self, new_reference: np.ndarray) -> None:
        """Express all weights relative to `new_reference` (exact powers of two)."""
        moved = np.flatnonzero(new_reference != self.reference)
        if moved.size == 0:
            return
        shift = (self.reference[moved] - new_reference[moved]) / self.half_life
        exponent = np.floor(shift + 0.5)
        exponent = np.clip(exponent, -2000, 2000).astype(np.int64)
        factor = np.ldexp(1.0, exponent)
        self.weights[moved] *= factor[:, None]
        self.total[moved] *= factor
        self.reference[moved] = new_reference[moved]

    def decay_factor(self, rows: np.ndarray, times: np.ndarray) -> np.ndarray:
        """2**((t - ref) / H) for samples already inside their row's horizon."""
        elapsed = (times - self.reference[rows]).astype(np.float64)
        return np.exp2(elapsed / self.half_life)

    # --- adding and removing ----------------------------------------------------------

    def add(self, rows: np.ndarray, buckets: np.ndarray, weights: np.ndarray) -> None:
        """Add weighted samples (already decayed) to their rows and buckets."""
        if rows.size == 0:
            return
        n_buckets = self.weights.shape[1]
        flat = rows * n_buckets + buckets
        flat_weights = self.weights.reshape(-1)
        low, high = int(flat.min()), int(flat.max()) + 1
        if high - low > 16 * rows.size:  # sparse: scattered adds beat a dense pass
            np.add.at(flat_weights, flat, weights)
            np.add.at(self.total, rows, weights)
            return
        # Dense sums over just the span of cells this batch touches.
        flat_weights[low:high] += np.bincount(flat - low, weights=weights, minlength=high - low)
        low_row, high_row = low // n_buckets, (high - 1) // n_buckets + 1
        self.total[low_row:high_row] += np.bincount(
            rows - low_row, weights=weights, minlength=high_row - low_row
        )

    def subtract(self, rows: np.ndarray, buckets: np.ndarray, weights: np.ndarray) -> None:
        """Remove weighted samples; a bucket left within epsilon of zero is emptied (upstream)."""
        if rows.size == 0:
            return
        n_buckets = self.weights.shape[1]
        cells, inverse = np.unique(rows * n_buckets + buckets, return_inverse=True)
        amount = np.bincount(inverse, weights=weights, minlength=cells.size)
        flat_weights = self.weights.reshape(-1)
        held = flat_weights[cells]
        removed = np.where(amount > held - self.epsilon, held, amount)
        flat_weights[cells] = held - removed
        np.subtract.at(self.total, cells // n_buckets, removed)
        # Removing every sample can leave -2e-16 (float order): a checkpoint may not be negative
        np.maximum(self.total, 0.0, out=self.total)

    # --- reading --------------------------------------------------------------------

    def cells(self) -> Cells:
        """The non-zero cells, for reading (see `recommender.vpa.cells`)."""
        return Cells.of(self.weights)

    def percentile_bucket(self, percentiles: list[float]) -> tuple[np.ndarray, np.ndarray]:
        """For each percentile p: the first bucket where the running weight reaches p * total.

        Returns (buckets (len(percentiles), rows) int64, nonempty (rows,) bool). As
        upstream, the walk starts at the lowest bucket holding at least epsilon and
        stops at the highest one.
        """
        thresholds = np.asarray(percentiles, dtype=np.float64)[:, None] * self.total[None, :]
        if self.weights.size <= _DENSE_CELLS:
            return self._dense_percentile_bucket(thresholds)
        span = self.cells().heavy_span(self.epsilon)
        _, highest = span.bucket_range()
        return span.bucket_at(span.cells_below(thresholds), highest[None, :]), span.nonempty

    def _dense_percentile_bucket(self, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`percentile_bucket` of a small matrix in a few whole-matrix calls: a replay asks
        for 50 rows at every window, where per-call overhead is the cost.

        The walk runs over each row's buckets from its lowest to its highest one holding
        epsilon. A running sum over every bucket (`np.cumsum`, left to right), with the
        buckets below the lowest set to 0, adds the same weights in the same order as
        the walk, since an empty bucket adds exactly 0.0; the walk can only stop at a
        bucket with weight, and never past the highest.
        """
        weights = self.weights
        heavy = weights >= self.epsilon
        nonempty: np.ndarray = np.any(heavy, axis=1)
        last = weights.shape[1] - 1
        lowest = np.argmax(heavy, axis=1)[:, None]
        highest = np.where(nonempty, last - np.argmax(heavy[:, ::-1], axis=1), last)
        columns = np.arange(weights.shape[1])
        walked = columns >= lowest
        running = np.cumsum(np.where(walked, weights, 0.0), axis=1)
        stops = walked & (columns <= highest[:, None]) & (weights > 0)
        reached = (running[None] >= thresholds[:, :, None]) & stops[None]
        buckets = np.where(reached.any(axis=2), reached.argmax(axis=2), highest[None, :])
        return np.where(nonempty[None, :], buckets, last), nonempty


def percentile_values(
    histograms: DecayingHistograms, starts: np.ndarray, percentiles: list[float]
) -> np.ndarray:
    """Upstream ``Percentile``: the END of the bucket holding p (start of the last one
    for the last bucket); 0 for an empty histogram. Shape (len(percentiles), rows)."""
    buckets, nonempty = histograms.percentile_bucket(percentiles)
    last = starts.shape[0] - 1
    values = starts[np.minimum(buckets + 1, last)]
    return np.where(nonempty[None, :], values, 0.0)
