"""VerticalPodAutoscalerCheckpoint statuses of many aggregates, in columns.

Upstream's `SaveToCheckpoint` fills one Go struct per aggregate, one map per
histogram. The same numbers here (integer bucket weights scaled to the heaviest,
total weights, reference and sample times, sample counts) are computed for all
aggregates at once and held as arrays: a `CheckpointExport`. From it come the
statuses as upstream's JSON, one document per aggregate (`json`, written straight
from the arrays by `recommender.vpa.checkpoint_json`), or as Python dicts
(`statuses`), which cost several times more to build than the numbers themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import islice
from typing import Any

import numpy as np

from recommender.vpa.checkpoint_codec import (
    CHECKPOINT_VERSION,
    format_time,
    format_times,
    normalised_weights,
)
from recommender.vpa.checkpoint_json import write_documents
from recommender.vpa.histogram import DecayingHistograms


@dataclass(frozen=True)
class HistogramColumns:
    """One resource's HistogramCheckpoints, one per row: the stored (row, bucket, weight)
    cells in row-major order (row r's are `bounds[r]:bounds[r + 1]`), total weights and
    reference times (UNIX seconds)."""

    buckets: np.ndarray
    weights: np.ndarray
    bounds: np.ndarray
    total: np.ndarray
    reference: np.ndarray
    n_buckets: int
    max_weight: int

    @classmethod
    def of(cls, histograms: DecayingHistograms, max_weight: int) -> HistogramColumns:
        stored = normalised_weights(histograms, max_weight)
        bounds = np.zeros(stored.n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(stored.rows, minlength=stored.n_rows), out=bounds[1:])
        return cls(
            buckets=stored.buckets,
            weights=stored.weights,
            bounds=bounds,
            total=np.maximum(histograms.total, 0.0),
            reference=histograms.reference.copy(),
            n_buckets=histograms.n_buckets,
            max_weight=max_weight,
        )


@dataclass(frozen=True)
class CheckpointExport:
    """The `status` of one VerticalPodAutoscalerCheckpoint per exported aggregate."""

    cpu: HistogramColumns
    memory: HistogramColumns
    first_sample: np.ndarray
    last_sample: np.ndarray
    sample_count: np.ndarray
    updated: int | None

    def __len__(self) -> int:
        return int(self.sample_count.shape[0])

    def json(self) -> list[bytes]:
        """Each status as JSON, byte-identical to `orjson.dumps` of its dict."""
        if len(self) == 0:
            return []
        text, starts, ends = write_documents(self)
        return [text[start:end] for start, end in zip(starts.tolist(), ends.tolist(), strict=True)]

    def statuses(self) -> list[dict[str, Any]]:
        """Each status as the dict the API's JSON decodes to."""
        updated = format_time(self.updated) if self.updated is not None else None
        return [
            {
                "lastUpdateTime": updated,
                "version": CHECKPOINT_VERSION,
                "cpuHistogram": cpu_histogram,
                "memoryHistogram": memory_histogram,
                "firstSampleStart": first,
                "lastSampleStart": last,
                "totalSamplesCount": count,
            }
            for cpu_histogram, memory_histogram, first, last, count in zip(
                _histogram_dicts(self.cpu),
                _histogram_dicts(self.memory),
                format_times(self.first_sample),
                format_times(self.last_sample),
                self.sample_count.tolist(),
                strict=True,
            )
        ]


# --- dicts ----------------------------------------------------------------------------


#: Weights up to this come from one table of int objects (upstream's top out at 10000).
_SHARED_NUMBERS_LIMIT = 100_000


@cache
def _shared_texts(n_buckets: int) -> np.ndarray:
    return _objects([str(bucket) for bucket in range(n_buckets)])


def _objects(items: list[str]) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def _histogram_dicts(histogram: HistogramColumns) -> list[dict[str, Any]]:
    """One HistogramCheckpoint dict per row. Bucket names and weights come from tables of
    shared objects, so the only objects made per cell are the dict entries themselves."""
    names = _shared_texts(histogram.n_buckets)[histogram.buckets].tolist()
    top = int(histogram.weights.max()) + 1 if histogram.weights.size else 1
    if top > _SHARED_NUMBERS_LIMIT:
        numbers = histogram.weights.tolist()
    else:
        numbers = np.arange(top, dtype=np.int64).astype(object)[histogram.weights].tolist()
    cells = zip(names, numbers, strict=True)
    weights = [dict(islice(cells, count)) for count in np.diff(histogram.bounds).tolist()]
    return [
        {"referenceTimestamp": reference, "bucketWeights": buckets, "totalWeight": total}
        for reference, buckets, total in zip(
            format_times(histogram.reference), weights, histogram.total.tolist(), strict=True
        )
    ]
