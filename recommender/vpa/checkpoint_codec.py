"""VerticalPodAutoscalerCheckpoint statuses: the stored weights, and reading them back.

The JSON shape is upstream's (version "v3"): bucket weights scaled so the
heaviest bucket is 10000 and rounded to integers, keyed by the bucket index as a
string, plus the exact total weight and the reference time. Times are RFC 3339
in UTC; Go's zero time is written as null, as metav1.Time does.

What a status may hold (types, RFC 3339 times, whole uint32 weights...) is decided
once, by `tailor.api.checkpoint`; a status is read through that model. Only what
needs this model is checked here: the version, bucket indices inside the histogram,
and lastSampleStart not before firstSampleStart. Statuses are written by
`recommender.vpa.checkpoint_export`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
from pydantic import ValidationError

from recommender.vpa.histogram import DecayingHistograms
from recommender.vpa.settings import ZERO_TIME

if TYPE_CHECKING:
    from tailor.api.checkpoint import HistogramCheckpoint

CHECKPOINT_VERSION = "v3"


class CheckpointError(ValueError):
    """A checkpoint status that upstream could not decode or that contradicts itself."""


def format_time(seconds: int) -> str | None:
    """UNIX seconds -> "2006-01-02T15:04:05Z"; the zero time -> None."""
    if seconds == ZERO_TIME:
        return None
    return datetime.fromtimestamp(int(seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def time_seconds(time: datetime | None) -> int:
    """A decoded metav1.Time -> whole UNIX seconds; unset (None) -> ZERO_TIME."""
    if time is None:
        return ZERO_TIME
    return int(time.timestamp() // 1)


def _describe(error: ValidationError) -> str:
    """Pydantic's errors as one CheckpointError message naming each field (JSON path)."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "status"
        problems.append(f"checkpoint {where}: {item['msg']}")
    return "; ".join(problems)


@dataclass(frozen=True)
class StoredWeights:
    """The integer bucket weights a checkpoint keeps, as (row, bucket, weight) cells in
    row-major order, for `n_rows` histograms."""

    rows: np.ndarray
    buckets: np.ndarray
    weights: np.ndarray
    n_rows: int


def normalised_weights(histograms: DecayingHistograms, max_weight: int) -> StoredWeights:
    """Integer weights per row as upstream stores them: heaviest bucket -> `max_weight`.

    Only the range between the lowest and highest non-empty bucket is written;
    rounding is Go's floor(x + 0.5) and zero results are dropped.
    """
    span = histograms.cells().heavy_span(histograms.epsilon)
    n_rows = span.first.shape[0]
    offsets = np.cumsum(span.length) - span.length
    if span.whole:
        rows, buckets, weights = span.cells.rows, span.cells.buckets, span.cells.weights
    else:
        rows = np.repeat(np.arange(n_rows), span.length)
        at = np.arange(rows.size) + np.repeat(span.first - offsets, span.length)
        buckets, weights = span.cells.buckets[at], span.cells.weights[at]
    heaviest = np.ones(n_rows)
    if rows.size:
        heaviest[span.nonempty] = np.maximum.reduceat(weights, offsets[span.nonempty])
    stored = np.floor(weights * (max_weight / heaviest)[rows] + 0.5).astype(np.int64)
    kept = stored > 0
    if kept.all():
        return StoredWeights(rows, buckets, stored, n_rows)
    return StoredWeights(rows[kept], buckets[kept], stored[kept], n_rows)


@dataclass(frozen=True)
class LoadedHistogram:
    """A HistogramCheckpoint expanded back into float weights."""

    weights: np.ndarray
    total: float
    reference: int


def load_histogram(
    checkpoint: HistogramCheckpoint | None, n_buckets: int, field: str = "histogram"
) -> LoadedHistogram:
    """Upstream LoadFromCheckpoint on an empty histogram: weights share the total pro rata.

    A missing histogram, map or total is empty, as Go's zero value; a bucket past the
    end of this model's histogram is a CheckpointError, as upstream refuses it.
    """
    weights = np.zeros(n_buckets)
    if checkpoint is None:
        return LoadedHistogram(weights, 0.0, ZERO_TIME)
    stored = checkpoint.bucket_weights or {}
    outside = sorted(bucket for bucket in stored if bucket >= n_buckets)
    if outside:
        raise CheckpointError(
            f"checkpoint {field}.bucketWeights: bucket {outside[0]} outside [0, {n_buckets})"
        )
    for bucket, weight in stored.items():
        weights[bucket] = weight
    total = checkpoint.total_weight or 0.0
    reference = time_seconds(checkpoint.reference_timestamp)
    weight_sum = weights.sum()
    if weight_sum == 0:
        return LoadedHistogram(np.zeros(n_buckets), 0.0, reference)
    return LoadedHistogram(weights * (total / weight_sum), total, reference)


@dataclass(frozen=True)
class LoadedStatus:
    """A whole VerticalPodAutoscalerCheckpoint status, checked before any state changes."""

    cpu: LoadedHistogram
    memory: LoadedHistogram
    first_sample: int
    last_sample: int
    sample_count: int


def load_status(status: object, cpu_buckets: int, memory_buckets: int) -> LoadedStatus:
    """Upstream AggregateContainerState.LoadFromCheckpoint's reading of a status object."""
    # the API's models take a quarter second to build: only a model loading checkpoints
    # needs them, not one fed from history (`tailor recommend`)
    from tailor.api.checkpoint import VerticalPodAutoscalerCheckpointStatus

    try:
        checkpoint = VerticalPodAutoscalerCheckpointStatus.model_validate(status)
    except ValidationError as error:
        raise CheckpointError(_describe(error)) from None
    if checkpoint.version != CHECKPOINT_VERSION:
        raise CheckpointError(f"unsupported checkpoint version {checkpoint.version!r}")
    first = time_seconds(checkpoint.first_sample_start)
    last = time_seconds(checkpoint.last_sample_start)
    if first != ZERO_TIME and last != ZERO_TIME and last < first:
        raise CheckpointError(
            f"checkpoint lastSampleStart {format_time(last)} is before "
            f"firstSampleStart {format_time(first)}"
        )
    return LoadedStatus(
        cpu=load_histogram(checkpoint.cpu_histogram, cpu_buckets, "cpuHistogram"),
        memory=load_histogram(checkpoint.memory_histogram, memory_buckets, "memoryHistogram"),
        first_sample=first,
        last_sample=last,
        sample_count=checkpoint.total_samples_count or 0,
    )


def format_times(seconds: np.ndarray) -> list[str | None]:
    """`format_time` of many at once: numpy writes the text of each distinct time once
    (reference times are whole half-lives, and most aggregates share their last sample)."""
    distinct, inverse = np.unique(np.asarray(seconds, dtype=np.int64), return_inverse=True)
    text = np.datetime_as_string(distinct.astype("datetime64[s]"), unit="s").astype(object) + "Z"
    text[distinct == ZERO_TIME] = None
    return list(text[inverse.reshape(-1)].tolist())
