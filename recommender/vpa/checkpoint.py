"""VerticalPodAutoscalerCheckpoint status dicts <-> histogram rows.

The JSON shape is upstream's (version "v3"): bucket weights scaled so the
heaviest bucket is 10000 and rounded to integers, keyed by the bucket index as a
string, plus the exact total weight and the reference time. Times are RFC 3339
in UTC; Go's zero time is written as null, as metav1.Time does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from recommender.vpa.histogram import DecayingHistograms
from recommender.vpa.settings import ZERO_TIME

CHECKPOINT_VERSION = "v3"


def format_time(seconds: int) -> str | None:
    """UNIX seconds -> "2006-01-02T15:04:05Z"; the zero time -> None."""
    if seconds == ZERO_TIME:
        return None
    return datetime.fromtimestamp(int(seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> int:
    """RFC 3339 text (or None) -> UNIX seconds (ZERO_TIME for None)."""
    if text is None or text == "":
        return ZERO_TIME
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() // 1)


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


def load_histogram(checkpoint: dict[str, Any] | None, n_buckets: int) -> LoadedHistogram:
    """Upstream LoadFromCheckpoint on an empty histogram: weights share the total pro rata."""
    weights = np.zeros(n_buckets)
    if not checkpoint:
        return LoadedHistogram(weights, 0.0, ZERO_TIME)
    total = float(checkpoint.get("totalWeight", 0.0) or 0.0)
    if total < 0:
        raise ValueError(f"checkpoint has negative total weight {total}")
    stored = checkpoint.get("bucketWeights") or {}
    for key, value in stored.items():
        bucket = int(key)
        if not 0 <= bucket < n_buckets:
            raise ValueError(f"checkpoint bucket {bucket} outside [0, {n_buckets})")
        weights[bucket] = float(value)
    reference = parse_time(checkpoint.get("referenceTimestamp"))
    weight_sum = weights.sum()
    if weight_sum == 0:
        return LoadedHistogram(np.zeros(n_buckets), 0.0, reference)
    return LoadedHistogram(weights * (total / weight_sum), total, reference)


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
