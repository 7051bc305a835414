"""Upstream's stacked estimators, in its integer resource units.

Upstream turns each percentile into a ``ResourceAmount`` (int64 millicores or
bytes, truncated, capped at 1e14) and applies margin, confidence multiplier and
pod minimum each with its own truncation; the final value is rounded up to the
``--round-cpu-millicores`` / ``--round-memory-bytes`` unit. Reproducing those
truncations is what makes a 2-container pod minimum 12 m rather than 12.5 m.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.vpa.settings import VpaSettings

#: Upstream's MaxResourceAmount (millicores or bytes).
MAX_RESOURCE_AMOUNT = 1e14


def to_amount(values: np.ndarray) -> np.ndarray:
    """Go's resourceAmountFromFloat: truncate toward zero, clamp to [0, 1e14].

    NaN (0 * inf from an infinite confidence factor) becomes 0, which is where
    the pod minimum then takes over, as in the Go binary.
    """
    values = np.asarray(values, dtype=np.float64)
    # fmax / fmin pass over NaN: NaN -> 0, -inf -> 0, +inf -> the cap (nan_to_num + clip,
    # in two calls instead of a dozen)
    return np.trunc(np.fmin(np.fmax(values, 0.0), MAX_RESOURCE_AMOUNT))


def scale_amount(amount: np.ndarray, factor: np.ndarray | float) -> np.ndarray:
    """Go's ScaleResource: amount * factor, then truncated and clamped."""
    with np.errstate(invalid="ignore", over="ignore"):
        return to_amount(amount * factor)


def with_margin(amount: np.ndarray, fraction: float) -> np.ndarray:
    """amount + ScaleResource(amount, fraction) (no clamp on the sum, as upstream)."""
    return amount + scale_amount(amount, fraction)


def confidence_days(
    first_sample: np.ndarray,
    last_sample: np.ndarray,
    sample_count: np.ndarray,
    interval_seconds: float,
) -> np.ndarray:
    """min(history span, samples at one per minute), both in `interval_seconds` units."""
    lifespan = (last_sample - first_sample).astype(np.float64) / interval_seconds
    samples = sample_count.astype(np.float64) / (interval_seconds / 60.0)
    return np.minimum(lifespan, samples)


def confidence_factor(confidence: np.ndarray, multiplier: float, exponent: float) -> np.ndarray:
    """(1 + multiplier / confidence) ** exponent; infinite (or 0) with no history."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(1.0 + multiplier / confidence, exponent)


def round_up(amount: np.ndarray, unit: int) -> np.ndarray:
    """Round up to a whole multiple of `unit` (no-op for unit 1 on integral amounts)."""
    if unit == 1:
        return amount
    return np.ceil(amount / unit) * unit


def pod_minimum_share(pod_minimum_amount: float, containers_per_pod: np.ndarray) -> np.ndarray:
    """ScaleResource(pod minimum, 1 / containers): each container's truncated share."""
    fraction = 1.0 / containers_per_pod.astype(np.float64)
    return scale_amount(to_amount(np.asarray(pod_minimum_amount)), fraction)


@dataclass(frozen=True)
class BoundAmounts:
    """Target / lower / upper in integer resource units (millicores or bytes)."""

    target: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def estimate_bounds(
    percentile_amounts: np.ndarray,
    confidence: np.ndarray,
    minimum: np.ndarray,
    settings: VpaSettings,
    rounding_unit: int,
) -> BoundAmounts:
    """Stack margin, confidence multipliers and the minimum on the three percentiles.

    percentile_amounts: (3, rows) as (target, lower, upper), already ResourceAmounts.
    """
    target, lower, upper = (with_margin(row, settings.safety_margin) for row in percentile_amounts)
    upper = scale_amount(
        upper,
        confidence_factor(
            confidence, settings.upper_confidence_multiplier, settings.upper_confidence_exponent
        ),
    )
    lower = scale_amount(
        lower,
        confidence_factor(
            confidence, settings.lower_confidence_multiplier, settings.lower_confidence_exponent
        ),
    )
    return BoundAmounts(
        target=round_up(np.maximum(target, minimum), rounding_unit),
        lower=round_up(np.maximum(lower, minimum), rounding_unit),
        upper=round_up(np.maximum(upper, minimum), rounding_unit),
    )


@dataclass(frozen=True)
class VpaRecommendation:
    """Recommendations per aggregate; all float64 arrays of shape (n_aggregates,).

    CPU in cores (whole millicores), memory in bytes (whole bytes), confidence in days.
    """

    cpu_target: np.ndarray
    cpu_lower: np.ndarray
    cpu_upper: np.ndarray
    memory_target: np.ndarray
    memory_lower: np.ndarray
    memory_upper: np.ndarray
    confidence: np.ndarray

    def to_frame(self, keys: pd.DataFrame | None = None) -> pd.DataFrame:
        """One row per aggregate, `keys` (one row per aggregate) in front when given."""
        frame = pd.DataFrame(
            {
                "cpu_target": self.cpu_target,
                "cpu_lower": self.cpu_lower,
                "cpu_upper": self.cpu_upper,
                "memory_target": self.memory_target,
                "memory_lower": self.memory_lower,
                "memory_upper": self.memory_upper,
                "confidence": self.confidence,
            }
        )
        if keys is None:
            return frame
        if len(keys) != len(frame):
            raise ValueError("keys must have one row per aggregate")
        return pd.concat([keys.reset_index(drop=True), frame], axis=1)
