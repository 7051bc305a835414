"""Every number of the upstream VPA recommender model, as one frozen value.

Defaults are the upstream flag defaults (vertical-pod-autoscaler 1.x), so
`VpaSettings()` is the reference baseline; a strategy that wants other knobs
builds its own instance instead of touching any shared state.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Go's zero `time.Time` (0001-01-01T00:00:00Z) in UNIX seconds. Upstream uses the
#: zero time as "never"; keeping the same sentinel reproduces its arithmetic exactly.
ZERO_TIME = -62_135_596_800


@dataclass(frozen=True)
class VpaSettings:
    """Parameters of the upstream recommender model (units: cores, bytes, seconds)."""

    # Estimators: percentile per bound, then margin, confidence and pod minimum.
    target_percentile: float = 0.9
    lower_percentile: float = 0.5
    upper_percentile: float = 0.95
    safety_margin: float = 0.15
    upper_confidence_multiplier: float = 1.0
    upper_confidence_exponent: float = 1.0
    lower_confidence_multiplier: float = 0.001
    lower_confidence_exponent: float = -2.0
    confidence_interval: float = 86400.0  # seconds per "day" of confidence
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
        if not 0.0 <= self.lower_percentile <= 1.0:
            raise ValueError("lower_percentile must lie in [0, 1]")
        if not 0.0 <= self.target_percentile <= 1.0:
            raise ValueError("target_percentile must lie in [0, 1]")
        if not 0.0 <= self.upper_percentile <= 1.0:
            raise ValueError("upper_percentile must lie in [0, 1]")
        if min(self.cpu_half_life, self.memory_half_life, self.confidence_interval) <= 0:
            raise ValueError("half-lives and the confidence interval must be positive")
        if self.memory_interval <= 0 or self.memory_intervals <= 0:
            raise ValueError("memory_interval and memory_intervals must be positive")
        if self.cpu_round_millicores < 1 or self.memory_round_bytes < 1:
            raise ValueError("rounding units must be at least 1")

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
