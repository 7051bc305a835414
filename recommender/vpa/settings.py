"""Every number of the upstream VPA recommender model, as one frozen value.

Defaults are the upstream flag defaults (vertical-pod-autoscaler 1.x), so
`VpaSettings()` is the reference baseline; a strategy that wants other knobs
builds its own instance instead of touching any shared state.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

from recommender.overrides import require

#: Go's zero `time.Time` (0001-01-01T00:00:00Z) in UNIX seconds. Upstream uses the
#: zero time as "never"; keeping the same sentinel reproduces its arithmetic exactly.
ZERO_TIME = -62_135_596_800


#: Fields that count things (seconds, units, intervals): a fraction would be truncated.
_WHOLE = (
    "cpu_round_millicores",
    "memory_round_bytes",
    "max_decay_exponent",
    "memory_interval",
    "memory_intervals",
    "checkpoint_max_weight",
)


@dataclass(frozen=True)
class VpaSettings:
    """Parameters of the upstream recommender model (units: cores, bytes, seconds)."""

    # Estimators: percentile per bound, then margin, confidence and pod minimum.
    target_percentile: float = 0.9
    lower_percentile: float = 0.5
    upper_percentile: float = 0.95
    # Upstream's per-resource flags (--target-cpu-percentile, --target-memory-percentile,
    # --recommendation-lower-bound-cpu-percentile, ...); None: the one above.
    cpu_target_percentile: float | None = None
    cpu_lower_percentile: float | None = None
    cpu_upper_percentile: float | None = None
    memory_target_percentile: float | None = None
    memory_lower_percentile: float | None = None
    memory_upper_percentile: float | None = None
    safety_margin: float = 0.15
    upper_confidence_multiplier: float = 1.0
    upper_confidence_exponent: float = 1.0
    lower_confidence_multiplier: float = 0.001
    lower_confidence_exponent: float = -2.0
    confidence_interval: float = 86400.0  # seconds per "day" of confidence
    # upstream's --confidence-interval-cpu / --confidence-interval-memory; None: the one above
    cpu_confidence_interval: float | None = None
    memory_confidence_interval: float | None = None
    pod_min_cpu: float = 0.025  # cores per pod
    pod_min_memory: float = 250 * 2**20  # bytes per pod
    cpu_round_millicores: int = 1  # --round-cpu-millicores: round final values up
    memory_round_bytes: int = 1  # --round-memory-bytes

    # Decaying histograms.
    cpu_half_life: float = 86400.0  # seconds
    memory_half_life: float = 86400.0
    max_decay_exponent: int = 100  # half-lives before the reference time moves
    cpu_sample_weight: float = 0.1
    memory_peak_weight: float = 1.0
    epsilon: float = 1e-4  # a bucket lighter than this counts as empty
    bucket_growth: float = 0.05
    cpu_first_bucket: float = 0.01  # cores
    cpu_max_value: float = 1000.0
    memory_first_bucket: float = 1e7  # bytes
    memory_max_value: float = 1e12

    # Memory peaks and OOM kills.
    memory_interval: int = 86400  # seconds per memory-peak aggregation interval
    memory_intervals: int = 8  # intervals before an idle aggregate expires
    oom_min_bump: float = 100 * 2**20
    oom_bump_ratio: float = 1.2

    # Input: usage is first quantised like the metrics API's Quantity
    # (CPU rounded up to whole millicores, memory up to whole bytes).
    quantize_usage: bool = True

    # Checkpoints.
    checkpoint_max_weight: int = 10000

    def __post_init__(self) -> None:
        """Refuse values that make no model (SettingsError): a half-life under half a second
        divided by zero, NaN or a negative margin gave silent nonsense."""
        values = [(f.name, getattr(self, f.name)) for f in fields(self)]
        values = [(name, value) for name, value in values if value is not None]
        checks = [
            (isinstance(value, numbers.Real), f"{name} must be a number") for name, value in values
        ]
        require(checks)  # the comparisons below need numbers
        checks = [
            (math.isfinite(value), f"{name} must be finite")
            for name, value in values
            if isinstance(value, float)
        ]
        checks += [
            (isinstance(getattr(self, name), numbers.Integral), f"{name} must be a whole number")
            for name in _WHOLE
        ]
        checks += [
            *(
                (0.0 < value <= 1.0, f"{name} must lie in (0, 1]")
                for name, value in values
                if name.endswith("_percentile")
            ),
            (self.safety_margin >= 0, "safety_margin cannot be negative"),
            (
                min(self.cpu_half_life, self.memory_half_life) >= 1,
                "half-lives must be at least 1 second",
            ),
            *(
                (value > 0, f"{name} must be positive")
                for name, value in values
                if name.endswith("confidence_interval")
            ),
            (self.pod_min_cpu >= 0 and self.pod_min_memory >= 0, "pod minimums cannot be negative"),
            (self.cpu_round_millicores >= 1, "cpu_round_millicores must be at least 1"),
            (self.memory_round_bytes >= 1, "memory_round_bytes must be at least 1"),
            (
                1 <= self.max_decay_exponent <= 500,  # 2^500 weights leave float64 room to sum
                "max_decay_exponent must be between 1 and 500",
            ),
            (
                self.cpu_sample_weight > 0 and self.memory_peak_weight > 0,
                "sample weights must be positive",
            ),
            (self.epsilon > 0, "epsilon must be positive (0 would count every bucket as full)"),
            (self.bucket_growth > 0, "bucket_growth must be positive"),
            (
                0 < self.cpu_first_bucket < self.cpu_max_value,
                "need 0 < cpu_first_bucket < cpu_max_value",
            ),
            (
                0 < self.memory_first_bucket < self.memory_max_value,
                "need 0 < memory_first_bucket < memory_max_value",
            ),
            (self.memory_interval > 0, "memory_interval must be positive"),
            (self.memory_intervals > 0, "memory_intervals must be positive"),
            (self.oom_min_bump >= 0, "oom_min_bump cannot be negative"),
            (self.oom_bump_ratio >= 1, "oom_bump_ratio must be at least 1"),
            (self.checkpoint_max_weight >= 1, "checkpoint_max_weight must be at least 1"),
        ]
        require(checks)

    def confidence_interval_of(self, resource: str) -> float:
        """Seconds per "day" of confidence for `resource` ("cpu" or "memory")."""
        own: float | None = getattr(self, f"{resource}_confidence_interval")
        return self.confidence_interval if own is None else own

    def percentiles(self, resource: str) -> list[float]:
        """[target, lower, upper] percentiles of `resource` ("cpu" or "memory")."""
        own = (
            getattr(self, f"{resource}_{bound}_percentile")
            for bound in ("target", "lower", "upper")
        )
        shared = (self.target_percentile, self.lower_percentile, self.upper_percentile)
        return [both if mine is None else mine for mine, both in zip(own, shared, strict=True)]

    @property
    def cpu_half_life_seconds(self) -> int:
        """Half-life as whole seconds (reference times are multiples of it)."""
        return round(self.cpu_half_life)

    @property
    def memory_half_life_seconds(self) -> int:
        return round(self.memory_half_life)

    @property
    def memory_window_length(self) -> int:
        """Seconds without samples after which upstream garbage-collects an aggregate."""
        return self.memory_interval * self.memory_intervals
