"""Building blocks the baseline strategies share: quantiles, decaying histograms, hysteresis.

All of them work on a whole block of containers at once, one row per container.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from recommender.overrides import NON_NEGATIVE, Checked, SettingsError, require
from recommender.replay import Fleet, Requests, differs
from tailor.change_budget import ChangeBudget
from tailor.durations import DurationError, whole_windows

MIB = 2.0**20


def grid_windows(settings: Any, name: str, step: int) -> int:
    """Sample windows of `step` seconds in the span `settings.<name>` (a period, a window).

    A span the user set must be whole windows: `update_period_seconds=420` on 5-minute
    data used to become 300 s silently. The default is rounded down as before (at least one
    window): nobody chose it, and it must run on any grid (vpa's 60 s loop is every window
    of 5-minute data).
    """
    seconds = getattr(settings, name)
    default = next(f.default for f in fields(settings) if f.name == name)
    if seconds == default:
        return max(1, seconds // step)
    try:
        return whole_windows(seconds, step, name)
    except DurationError as error:
        raise SettingsError(str(error)) from None


def row_quantile(values: np.ndarray, q: float) -> np.ndarray:
    """Per row, the q-quantile (linear interpolation) of its non-NaN values; NaN if none."""
    ordered = np.sort(values, axis=1)  # NaNs sort last
    count = (~np.isnan(values)).sum(axis=1)
    position = q * np.maximum(count - 1, 0)
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, np.maximum(count - 1, 0))
    rows = np.arange(values.shape[0])
    fraction = position - low
    result = ordered[rows, low] * (1 - fraction) + ordered[rows, high] * fraction
    return np.where(count > 0, result, np.nan)


@dataclass(frozen=True)
class Floor:
    """Smallest requests a strategy hands out (KRR's defaults: 10 millicores, 100 MiB).

    Without one, a container that used nothing for a while would get a zero
    memory limit and, its kills capped at zero, never learn its way out.
    """

    cpu: float = 0.010
    memory: float = 100 * MIB

    def __post_init__(self) -> None:
        require([(self.cpu >= 0.0 and self.memory >= 0.0, "floor: cannot be negative")])


def round_requests(
    cpu: np.ndarray, memory: np.ndarray, floor: Floor | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """At least the floor; CPU up to whole millicores, memory up to whole MiB; NaN stays NaN."""
    floor = floor or Floor()
    cpu = np.ceil(np.maximum(cpu, floor.cpu) * 1000 - 1e-9) / 1000
    memory = np.ceil(np.maximum(memory, floor.memory) / MIB - 1e-9) * MIB
    return cpu, memory


class DecayingHistograms:
    """One exponentially bucketed histogram per container, samples decaying with age.

    A sample at time t weighs 2^((t - reference) / half_life); the reference is a
    multiple of 32 half-lives (absolute time, so results do not depend on where a
    replay started) and moves forward, rescaling every weight, before the
    exponent grows large. Only relative weights matter and nothing overflows.
    """

    def __init__(
        self, rows: int, first: float, max_value: float, half_life: float, growth: float = 0.05
    ) -> None:
        ratio = 1.0 + growth
        count = math.ceil(math.log(max_value * growth / first + 1) / math.log(ratio)) + 1
        self._first, self._log_ratio, self._growth = first, math.log(ratio), growth
        index = np.arange(count + 1, dtype=np.float64)
        self.edges = (
            first * (np.power(ratio, index) - 1) / growth
        )  # bucket b: [edges[b], edges[b+1])
        self.upper = self.edges[1:]
        self.weights = np.zeros((rows, count))
        self._rows = np.arange(rows)
        self._half_life = half_life
        self._reference: float | None = None

    def _bucket(self, values: np.ndarray) -> np.ndarray:
        raw = np.log(values * self._growth / self._first + 1) / self._log_ratio
        return np.clip(raw, 0, self.weights.shape[1] - 1).astype(np.int64)

    def add(self, time: float, values: np.ndarray, scale: float = 1.0) -> None:
        """One sample per row at `time` (NaN = none), weighted `scale` before decay."""
        epoch = self._half_life * 32
        reference = time // epoch * epoch
        if self._reference is None:
            self._reference = reference
        elif reference > self._reference:
            self.weights *= 2.0 ** ((self._reference - reference) / self._half_life)
            self._reference = reference
        weight = scale * 2.0 ** ((time - self._reference) / self._half_life)
        present = ~np.isnan(values)
        rows = self._rows[present]
        self.weights[rows, self._bucket(values[present])] += weight

    def add_rows(self, time: float, rows: np.ndarray, values: np.ndarray) -> None:
        """Samples for some rows only (e.g. OOM kills)."""
        full = np.full(self.weights.shape[0], np.nan)
        full[rows] = values
        self.add(time, full)

    def quantile(self, q: float, load_adjusted: bool = False) -> np.ndarray:
        """Per row, the upper edge of the bucket where the weight reaches q; NaN if empty.

        load_adjusted weighs each bucket by its value as well (Autopilot's CPU
        percentile: the share of usage, not of time, that fits under the answer).
        """
        weights = self.weights * self.upper if load_adjusted else self.weights
        cumulative = np.cumsum(weights, axis=1)
        total = cumulative[:, -1]
        bucket = (cumulative < (q * total)[:, None]).sum(axis=1)
        bucket = np.minimum(bucket, self.weights.shape[1] - 1)
        return np.where(total > 0, self.upper[bucket], np.nan)


@dataclass(frozen=True)
class HysteresisPolicy(Checked):
    """Apply a new recommendation only when it is worth a resize.

    A container is resized when it has no request yet, when it was OOM-killed
    since the last decision, or when the CPU or memory recommendation differs
    from the request in force by at least `min_relative_change`. With
    `max_changes_per_day` (0 = no cap) the last reason also needs the container's
    change budget (`tailor.change_budget`): a baseline held to the same
    constraint as `forecast`. The restart after an OOM kill is never held back.
    """

    GROUP = "policy: "
    min_relative_change: float = field(default=0.10, metadata=NON_NEGATIVE)
    max_changes_per_day: int = field(default=0, metadata=NON_NEGATIVE)

    def apply(
        self,
        current: Requests,
        cpu: np.ndarray,
        memory: np.ndarray,
        forced: np.ndarray,
        allowed: np.ndarray | None = None,
    ) -> Requests:
        """The requests after this decision; `allowed` (bool per container, None = all)
        says who may still change for a moved recommendation."""
        with np.errstate(divide="ignore", invalid="ignore"):
            cpu_off = np.abs(cpu - current.cpu) >= self.min_relative_change * current.cpu
            memory_off = (
                np.abs(memory - current.memory) >= self.min_relative_change * current.memory
            )
        # A resource the strategy cannot recommend (memory of CPU-only data) stays unset
        # without forcing a resize every time.
        unset = (np.isnan(current.cpu) & ~np.isnan(cpu)) | (
            np.isnan(current.memory) & ~np.isnan(memory)
        )
        moved = cpu_off | memory_off
        if allowed is not None:
            moved &= allowed
        act = (unset | forced | moved) & ~(np.isnan(cpu) & np.isnan(memory))
        new_cpu = np.where(act & ~np.isnan(cpu), cpu, current.cpu)
        new_memory = np.where(act & ~np.isnan(memory), memory, current.memory)
        return Requests(new_cpu, new_memory, current.memory_limit)


class PolicyUpdates:
    """A `HysteresisPolicy` at work over one fleet: it keeps the change budget,
    counted as `forecast` counts its own (`ChangeBudget.record`)."""

    def __init__(self, policy: HysteresisPolicy) -> None:
        self.policy = policy
        self.fleet: Fleet | None = None
        self.budget: ChangeBudget | None = None

    def reset(self, fleet: Fleet) -> None:
        cap = self.policy.max_changes_per_day
        self.fleet = fleet
        self.budget = ChangeBudget(fleet.size, cap) if cap else None

    def apply(
        self, step: int, current: Requests, cpu: np.ndarray, memory: np.ndarray, forced: np.ndarray
    ) -> Requests:
        """The requests in force from window `step + 1` on."""
        if self.budget is None or self.fleet is None:
            return self.policy.apply(current, cpu, memory, forced)
        now = float(self.fleet.time_of(step + 1))
        decided = self.policy.apply(current, cpu, memory, forced, self.budget.left(now) > 0)
        changed = differs(decided.cpu, current.cpu) | differs(decided.memory, current.memory)
        self.budget.record(changed, current.cpu, now)
        return decided
