"""VerticalPodAutoscalerCheckpoint status dicts <-> histogram rows.

The JSON shape is upstream's (version "v3"): bucket weights scaled so the
heaviest bucket is 10000 and rounded to integers, keyed by the bucket index as a
string, plus the exact total weight and the reference time. Times are RFC 3339
in UTC; Go's zero time is written as null, as metav1.Time does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from recommender.vpa.histogram import DecayingHistograms
from recommender.vpa.settings import ZERO_TIME
from tailor.api.checkpoint import UINT32_MAX  # upstream stores bucket weights as uint32

CHECKPOINT_VERSION = "v3"
#: RFC 3339 as metav1.Time reads it (Go's time.RFC3339): a date alone is not a time.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


class CheckpointError(ValueError):
    """A checkpoint status that upstream could not decode or that contradicts itself."""


def format_time(seconds: int) -> str | None:
    """UNIX seconds -> "2006-01-02T15:04:05Z"; the zero time -> None."""
    if seconds == ZERO_TIME:
        return None
    return datetime.fromtimestamp(int(seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object, field: str = "time") -> int:
    """RFC 3339 text (or None) -> UNIX seconds (ZERO_TIME for None); CheckpointError if not."""
    if text is None or text == "":
        return ZERO_TIME
    if not isinstance(text, str) or not _RFC3339.fullmatch(text):
        raise CheckpointError(f"checkpoint {field} {text!r} is not an RFC 3339 time")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CheckpointError(f"checkpoint {field} {text!r} is not a valid time") from None
    return int(parsed.timestamp() // 1)


def _number(value: object, field: str) -> float:
    """A JSON number (not a string or a boolean), finite and not negative."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CheckpointError(f"checkpoint {field} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise CheckpointError(f"checkpoint {field} must be finite and >= 0, got {value!r}")
    return float(value)


def _whole(value: object, field: str, largest: float = math.inf) -> int:
    """A whole JSON number in [0, largest] (Go decodes it into an unsigned or int field)."""
    number = _number(value, field)
    if number != int(number) or number > largest:
        raise CheckpointError(f"checkpoint {field} must be a whole number, got {value!r}")
    return int(number)


def _mapping(value: object, field: str) -> dict[Any, Any]:
    """An object; missing (None) is empty, as Go's zero value."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CheckpointError(f"checkpoint {field} must be an object, got {type(value).__name__}")
    return value


def normalised_weights(histograms: DecayingHistograms, max_weight: int) -> np.ndarray:
    """Integer weights per row as upstream stores them: heaviest bucket -> `max_weight`.

    Only the range between the lowest and highest non-empty bucket is written;
    rounding is Go's floor(x + 0.5) and zero results are dropped by the caller.
    """
    nonempty, lowest, highest = histograms.occupied_range()
    columns = np.arange(histograms.n_buckets)
    in_range = (columns >= lowest[:, None]) & (columns <= highest[:, None]) & nonempty[:, None]
    weights = np.where(in_range, histograms.weights, 0.0)
    heaviest = weights.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(heaviest > 0, max_weight / heaviest, 0.0)
    return np.floor(weights * ratio[:, None] + 0.5).astype(np.int64)


def histogram_dict(weights: np.ndarray, total: float, reference: int) -> dict[str, Any]:
    """One HistogramCheckpoint from a row of normalised integer weights."""
    buckets = np.flatnonzero(weights > 0)
    return {
        "referenceTimestamp": format_time(reference),
        "bucketWeights": {str(int(b)): int(weights[b]) for b in buckets},
        "totalWeight": float(total),
    }


@dataclass(frozen=True)
class LoadedHistogram:
    """A HistogramCheckpoint expanded back into float weights."""

    weights: np.ndarray
    total: float
    reference: int


def load_histogram(checkpoint: object, n_buckets: int, field: str = "histogram") -> LoadedHistogram:
    """Upstream LoadFromCheckpoint on an empty histogram: weights share the total pro rata.

    Weights are whole numbers (uint32 upstream) keyed by bucket index; anything Go
    could not decode is a CheckpointError rather than a silently skewed histogram.
    """
    weights = np.zeros(n_buckets)
    histogram = _mapping(checkpoint, field)
    if not histogram:
        return LoadedHistogram(weights, 0.0, ZERO_TIME)
    total = _number(histogram.get("totalWeight") or 0.0, f"{field}.totalWeight")
    stored = _mapping(histogram.get("bucketWeights"), f"{field}.bucketWeights")
    for key, value in stored.items():
        if isinstance(key, bool) or not re.fullmatch(r"-?[0-9]+", str(key)):
            raise CheckpointError(f"checkpoint {field} bucket {key!r} is not a bucket index")
        bucket = int(str(key))
        if not 0 <= bucket < n_buckets:
            raise CheckpointError(f"checkpoint {field} bucket {bucket} outside [0, {n_buckets})")
        weights[bucket] = _whole(value, f"{field} bucket {bucket} weight", UINT32_MAX)
    reference = parse_time(histogram.get("referenceTimestamp"), f"{field}.referenceTimestamp")
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
    if not isinstance(status, dict):
        raise CheckpointError(f"checkpoint status must be an object, got {type(status).__name__}")
    version = status.get("version")
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(f"unsupported checkpoint version {version!r}")
    first = parse_time(status.get("firstSampleStart"), "firstSampleStart")
    last = parse_time(status.get("lastSampleStart"), "lastSampleStart")
    if first != ZERO_TIME and last != ZERO_TIME and last < first:
        raise CheckpointError(
            f"checkpoint lastSampleStart {status['lastSampleStart']} is before "
            f"firstSampleStart {status['firstSampleStart']}"
        )
    return LoadedStatus(
        cpu=load_histogram(status.get("cpuHistogram"), cpu_buckets, "cpuHistogram"),
        memory=load_histogram(status.get("memoryHistogram"), memory_buckets, "memoryHistogram"),
        first_sample=first,
        last_sample=last,
        sample_count=_whole(status.get("totalSamplesCount") or 0, "totalSamplesCount"),
    )


def status_dicts(
    cpu: DecayingHistograms,
    memory: DecayingHistograms,
    first_sample: np.ndarray,
    last_sample: np.ndarray,
    sample_count: np.ndarray,
    now: int | None,
    max_weight: int,
) -> list[dict[str, Any]]:
    """VerticalPodAutoscalerCheckpoint `status` objects, one per histogram row."""
    cpu_weights = normalised_weights(cpu, max_weight)
    memory_weights = normalised_weights(memory, max_weight)
    return [
        {
            "lastUpdateTime": format_time(now) if now is not None else None,
            "version": CHECKPOINT_VERSION,
            "cpuHistogram": histogram_dict(cpu_weights[i], cpu.total[i], int(cpu.reference[i])),
            "memoryHistogram": histogram_dict(
                memory_weights[i], memory.total[i], int(memory.reference[i])
            ),
            "firstSampleStart": format_time(int(first_sample[i])),
            "lastSampleStart": format_time(int(last_sample[i])),
            "totalSamplesCount": int(sample_count[i]),
        }
        for i in range(cpu.weights.shape[0])
    ]
