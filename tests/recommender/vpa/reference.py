"""A slow, sample-by-sample model of the upstream recommender, for cross-checking.

Written straight from the upstream rules (one Python object per histogram and per
container, every sample walked in order), sharing nothing with the vectorised
model but the bucket formula. Tests feed both the same data and compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from recommender.vpa.buckets import ExponentialBuckets
from recommender.vpa.settings import ZERO_TIME, VpaSettings


def go_round_time(t: int, half_life: int) -> int:
    remainder = (t - ZERO_TIME) % half_life
    if remainder + remainder < half_life:
        return t - remainder
    return t + half_life - remainder


def amount(x: float) -> int:
    """Go resourceAmountFromFloat (NaN -> 0, as the pod minimum hides the Go value)."""
    if math.isnan(x) or x < 0:
        return 0
    if x > 1e14:
        return int(1e14)
    return math.trunc(x)


@dataclass
class RefHistogram:
    buckets: ExponentialBuckets
    half_life: int
    epsilon: float
    max_exponent: int = 100
    weights: list[float] = field(default_factory=list)
    total: float = 0.0
    reference: int = ZERO_TIME
    min_bucket: int = 0
    max_bucket: int = 0

    def __post_init__(self) -> None:
        self.weights = [0.0] * self.buckets.count
        self.min_bucket = self.buckets.count - 1
        self.max_bucket = 0

    def _decay(self, t: int) -> float:
        if t > self.reference + self.half_life * self.max_exponent:
            new_reference = go_round_time(t, self.half_life)
            exponent = math.floor((self.reference - new_reference) / self.half_life + 0.5)
            factor = math.ldexp(1.0, max(exponent, -2000))
            for b in range(self.min_bucket, self.max_bucket + 1):
                self.weights[b] *= factor
            self.total *= factor
            self._narrow()
            self.reference = new_reference
        return 2.0 ** ((t - self.reference) / self.half_life)

    def _narrow(self) -> None:
        last = self.buckets.count - 1
        while self.weights[self.min_bucket] < self.epsilon and self.min_bucket < last:
            self.min_bucket += 1
        while self.weights[self.max_bucket] < self.epsilon and self.max_bucket > 0:
            self.max_bucket -= 1

    def add(self, value: float, weight: float, t: int) -> None:
        w = weight * self._decay(t)
        b = self.buckets.scalar_bucket(value)
        self.weights[b] += w
        self.total += w
        if self.weights[b] >= self.epsilon:
            self.min_bucket = min(self.min_bucket, b)
            self.max_bucket = max(self.max_bucket, b)

    def subtract(self, value: float, weight: float, t: int) -> None:
        w = weight * self._decay(t)
        b = self.buckets.scalar_bucket(value)
        if w > self.weights[b] - self.epsilon:
            w = self.weights[b]
        self.total -= w
        self.weights[b] -= w
        self._narrow()

    def percentile(self, p: float) -> float:
        if self.weights[self.min_bucket] < self.epsilon:
            return 0.0
        threshold = p * self.total
        partial = 0.0
        b = self.min_bucket
        while b < self.max_bucket:
            partial += self.weights[b]
            if partial >= threshold:
                break
            b += 1
        if b < self.buckets.count - 1:
            return self.buckets.start(b + 1)
        return self.buckets.start(b)


@dataclass
class RefAggregate:
    cpu: RefHistogram
    memory: RefHistogram
    first: int = ZERO_TIME
    last: int = ZERO_TIME
    count: int = 0


@dataclass
class RefContainer:
    aggregate: RefAggregate
    last_cpu: int = ZERO_TIME
    last_memory: int = ZERO_TIME
    window_end: int = ZERO_TIME
    memory_peak: int = 0
    oom_peak: int = 0


class ReferenceModel:
    def __init__(self, series_to_aggregate: list[int], settings: VpaSettings) -> None:
        from recommender.vpa.buckets import cpu_buckets, memory_buckets

        self.s = settings
        n_aggregates = max(series_to_aggregate) + 1
        self.aggregates = [
            RefAggregate(
                RefHistogram(
                    cpu_buckets(settings),
                    settings.cpu_half_life_seconds,
                    settings.epsilon,
                    settings.max_decay_exponent,
                ),
                RefHistogram(
                    memory_buckets(settings),
                    settings.memory_half_life_seconds,
                    settings.epsilon,
                    settings.max_decay_exponent,
                ),
            )
            for _ in range(n_aggregates)
        ]
        self.containers = [RefContainer(self.aggregates[a]) for a in series_to_aggregate]

    def add_cpu(self, series: int, t: int, cores: float) -> None:
        c = self.containers[series]
        if math.isnan(cores) or cores < 0 or not t > c.last_cpu:
            return
        millicores = math.ceil(round(cores * 1e9) / 1e6)
        agg = c.aggregate
        agg.cpu.add(millicores / 1000.0, self.s.cpu_sample_weight, t)
        agg.last = max(agg.last, t)
        if agg.first == ZERO_TIME or t < agg.first:
            agg.first = t
        agg.count += 1
        c.last_cpu = t

    def add_memory(self, series: int, t: int, used_bytes: float, oom: bool = False) -> None:
        c = self.containers[series]
        if math.isnan(used_bytes) or used_bytes < 0 or (not oom and t < c.last_memory):
            return
        usage = math.ceil(used_bytes)
        c.last_memory = t
        if c.window_end == ZERO_TIME:
            c.window_end = t
        hist = c.aggregate.memory
        add_new = False
        if t < c.window_end:
            old = max(c.memory_peak, c.oom_peak)
            if old != 0 and usage > old:
                hist.subtract(old, 1.0, c.window_end)
                add_new = True
        else:
            interval = self.s.memory_interval
            c.window_end += (t - c.window_end) // interval * interval + interval
            c.memory_peak = 0
            c.oom_peak = 0
            add_new = True
        if add_new:
            hist.add(usage, 1.0, c.window_end)
            if oom:
                c.oom_peak = usage
            else:
                c.memory_peak = usage

    def add_oom(self, series: int, t: int, request: float) -> None:
        c = self.containers[series]
        if t < c.window_end - self.s.memory_interval:
            return
        used = max(0 if math.isnan(request) else amount(math.ceil(request)), c.memory_peak)
        needed = max(used + amount(self.s.oom_min_bump), amount(used * self.s.oom_bump_ratio))
        self.add_memory(series, t, needed, oom=True)

    def recommend(self, aggregate: int, containers: int = 1) -> dict[str, float]:
        s = self.s
        agg = self.aggregates[aggregate]
        lifespan = (agg.last - agg.first) / s.confidence_interval
        confidence = min(lifespan, agg.count / (s.confidence_interval / 60.0))
        out: dict[str, float] = {"confidence": confidence}
        for name, hist, to_units, minimum, unit in (
            ("cpu", agg.cpu, 1000.0, s.pod_min_cpu * 1000.0, s.cpu_round_millicores),
            ("memory", agg.memory, 1.0, s.pod_min_memory, s.memory_round_bytes),
        ):
            share = amount(amount(minimum) * (1.0 / containers))
            for bound, p in (
                ("target", s.target_percentile),
                ("lower", s.lower_percentile),
                ("upper", s.upper_percentile),
            ):
                base = amount(hist.percentile(p) * to_units)
                base = base + amount(base * s.safety_margin)
                if bound != "target":
                    mult, expo = (
                        (s.upper_confidence_multiplier, s.upper_confidence_exponent)
                        if bound == "upper"
                        else (s.lower_confidence_multiplier, s.lower_confidence_exponent)
                    )
                    factor = (
                        (1.0 + mult / confidence) ** expo
                        if confidence > 0
                        else (math.inf if expo > 0 else 0.0)
                    )
                    base = amount(base * factor) if not (base == 0 and math.isinf(factor)) else 0
                value = max(base, share)
                value = math.ceil(value / unit) * unit
                out[f"{name}_{bound}"] = value / to_units
        return out
