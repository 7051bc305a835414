"""The forecast policy: one object that moves requests along a plan, wherever it runs.

The backtest's strategy, `tailor schedule` and the recommender service all run a
`ForecastPolicy` on plans of `make_plan`, so the published schedule plays exactly the
rules the backtest measured: it says what a schedule must play (`Needs`; a workload's
pods merged on them), and sets the requests of each block boundary.

Every change is a resize on a live pod, so a request moves only when it matters: the
hysteresis of `HysteresisSettings`, whose fields say how.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from recommender.data.arrays import UsageArrays
from recommender.forecast.memory import OomHistory, recent_peak
from recommender.forecast.planner import Plan
from recommender.forecast.settings import ForecastSettings
from tailor.change_budget import ChangeBudget

MEMORY_ALONE_DECREASE = 0.3  # a memory-only resize down must cut the limit by this share


def cover(required: np.ndarray, blocks: int) -> np.ndarray:
    """Highest requirement of the first `blocks` columns, NaN-aware: (series,)."""
    return recent_peak(required[:, :blocks], blocks)


@dataclass(frozen=True)
class Needs:
    """What a schedule plays, per unit (a series, or a workload's pods merged): per block
    of the horizon the `cpu` requirement and `memory` limit needed; per unit the recent
    CPU peak `scale` ("clearly" and "small" are shares of it), the last `usage`, the
    range of the last reaction windows, the OOM hold and the peaks the upper bounds
    cover; and the block grid.
    """

    cpu: np.ndarray
    memory: np.ndarray
    scale: np.ndarray
    usage: np.ndarray
    recent_low: np.ndarray
    recent_high: np.ndarray
    hold_until: np.ndarray
    cpu_peak: np.ndarray
    memory_peak: np.ndarray
    block_start: float
    history_end: float
    first_start: float
    period: int

    def _arrays(self) -> list[str]:
        return [f.name for f in fields(self) if isinstance(getattr(self, f.name), np.ndarray)]

    def rows(self, rows: np.ndarray) -> Needs:
        """The needs of some units."""
        return replace(self, **{name: getattr(self, name)[rows] for name in self._arrays()})

    def merged(self, groups: np.ndarray, count: int) -> Needs:
        """Units merged into `count` groups (`groups[i]`: unit i's group) by their largest
        value everywhere: pods of a workload share one spec, sized for the largest."""
        merged: dict[str, Any] = {}
        for name in self._arrays():
            values = getattr(self, name)
            out = np.full((count, *values.shape[1:]), np.nan)
            np.fmax.at(out, groups, values)
            merged[name] = out
        return replace(self, **merged)

    @classmethod
    def joined(cls, parts: list[Needs]) -> Needs:
        """Needs of chunks planned apart on the same grid, one after the other."""
        first = parts[0]
        arrays: dict[str, Any] = {
            name: np.concatenate([getattr(p, name) for p in parts]) for name in first._arrays()
        }
        return replace(first, **arrays)


@dataclass(frozen=True)
class InForce:
    """Per unit: the requests in force (NaN = unknown) and the change budget already
    spent (None: nothing on record, a fresh budget)."""

    cpu: np.ndarray
    memory: np.ndarray
    budget: ChangeBudget | None = None


@dataclass(frozen=True)
class ForecastPolicy:
    """The forecast strategy's rules on one `ForecastSettings` (see the module docstring)."""

    settings: ForecastSettings = field(default_factory=ForecastSettings)

    def needs(self, plan: Plan, usage: UsageArrays, ooms: OomHistory) -> Needs:
        """What a schedule of `plan` plays, from the history `usage` it was made on."""
        s = self.settings
        end = usage.start + usage.n_windows * usage.step
        unknown = np.full(usage.n_series, np.nan)
        recent = usage.cpu[:, -s.reactions.react_after_windows :]
        with np.errstate(invalid="ignore"):
            low = np.min(recent, axis=1) if recent.shape[1] else unknown
        return Needs(
            cpu=plan.cpu_required,
            memory=plan.memory.required,
            scale=plan.calibration.scale,
            usage=usage.cpu[:, -1] if usage.n_windows else unknown,
            recent_low=low,
            recent_high=recent_peak(recent, recent.shape[1]) if recent.shape[1] else unknown,
            hold_until=ooms.hold_until.copy(),
            cpu_peak=recent_peak(usage.cpu, usage.n_windows) if usage.n_windows else unknown,
            memory_peak=plan.memory.peak,
            block_start=float(((end - usage.step) // plan.period) * plan.period),
            history_end=float(end),
            first_start=float(plan.first_block * plan.period),
            period=plan.period,
        )

    def boundary_cpu(
        self,
        current: np.ndarray,
        ahead: np.ndarray,
        left: np.ndarray,
        usage: np.ndarray,
        scale: np.ndarray,
    ) -> np.ndarray:
        """The CPU level a block boundary sets (in the strategy and the published schedule):
        the need `ahead` through the hysteresis within the `left` changes; a cut never
        below the `usage` right now, and none that saves less than `min_decrease_share`
        of the recent peak `scale` (not worth a resize)."""
        s = self.settings
        level = self.cpu_step(current, ahead, left > 0, left > s.reserved_changes)
        planned = self._kept_above_usage(level, current, usage)
        small = current - planned < s.hysteresis.min_decrease_share * scale
        return np.where((planned < current) & small, current, planned)

    def cpu_step(
        self,
        current: np.ndarray,
        required: np.ndarray,
        may_increase: np.ndarray,
        may_decrease: np.ndarray,
    ) -> np.ndarray:
        """The CPU request for the coming block from `current` (NaN = none yet) and the
        `required` of the blocks ahead, as far as the change budget allows (`may_...`)."""
        h = self.settings.hysteresis
        now = required[:, 0]
        level = cover(required, h.cover_blocks)
        unset = np.isnan(current) & ~np.isnan(level)
        up = may_increase & (now > current * (1.0 + h.increase_threshold))
        down = may_decrease & (level < current * (1.0 - h.decrease_threshold))
        return np.where(unset | up | down, level, current)

    def _kept_above_usage(
        self, planned: np.ndarray, current: np.ndarray, usage: np.ndarray
    ) -> np.ndarray:
        """A cut never goes below what the container is using right now (+ the reaction
        margin), nor, for that reason, above the request in force."""
        below = (usage > planned) & (planned < current)
        using = usage * (1.0 + self.settings.reactions.react_margin)
        return np.where(below, np.fmin(current, np.fmax(planned, using)), planned)

    def ride_with_memory(
        self,
        cpu: np.ndarray,
        required: np.ndarray,
        resized: np.ndarray,
        usage: np.ndarray,
        clearly: np.ndarray,
        follows_plan: np.ndarray,
    ) -> np.ndarray:
        """CPU for series whose memory is `resized` anyway (an OOM kill's bump, a rise): the
        resize is a change, so CPU rides along, up to the last `usage` + the reaction margin
        when that was `clearly` above the request (one resize, not a reaction later), else,
        where it `follows_plan`, to the plan's level with the boundary's thresholds (kills
        spend a young container's budget, leaving its CPU where the plan no longer wants it).
        """
        if not resized.any():
            return cpu
        short = resized & (usage > cpu + clearly)
        using = usage * (1.0 + self.settings.reactions.react_margin)
        raised = np.where(short, np.fmax(cpu, using), cpu)
        alone = resized & ~short & follows_plan
        planned = self.cpu_step(raised, required, alone, alone)
        return self._kept_above_usage(planned, raised, usage)

    def memory_step(
        self,
        current: np.ndarray,
        needed: np.ndarray,
        may_rise: np.ndarray,
        may_fall: np.ndarray,
        riding: np.ndarray,
        held: np.ndarray,
    ) -> np.ndarray:
        """The memory request (= limit) at a block boundary: up as soon as the need eats into
        half the headroom (`may_rise`); down alone only by `MEMORY_ALONE_DECREASE` (`may_fall`)
        and never during an OOM hold (`held`); to the need whenever CPU is resized anyway
        (`riding`, down only outside a hold): one resize for both."""
        known = ~np.isnan(needed)
        unset = np.isnan(current) & known
        up = may_rise & (needed > current * (1.0 + self.settings.memory_margin / 2.0))
        alone_down = may_fall & ~held & (needed < current * (1.0 - MEMORY_ALONE_DECREASE))
        along = riding & known & ((needed > current) | ~held)
        return np.where(unset | up | alone_down | along, needed, current)

    def schedule(
        self, needs: Needs, in_force: InForce | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """CPU and memory per block, (units, 1 + horizon): the rest of the block in force,
        then each block of the horizon as the strategy's boundaries set it, from what is
        `in_force` (default: nothing, a fresh budget)."""
        s = self.settings
        n, horizon = needs.cpu.shape
        if in_force is None:
            in_force = InForce(np.full(n, np.nan), np.full(n, np.nan))
        budget = in_force.budget or ChangeBudget(n, s.max_changes_per_day)
        cpu, memory = self._block_in_force(needs, in_force.cpu, in_force.memory, budget)
        cpu_out, memory_out = [cpu], [memory]
        unknown = np.full(n, np.nan)
        for k in range(horizon):
            now = needs.first_start + k * needs.period
            left = budget.left(now)
            usage = needs.usage if k == 0 else unknown  # only the first block knows it
            new_cpu = self.boundary_cpu(cpu, needs.cpu[:, k:], left, usage, needs.scale)
            moves = ~np.isclose(new_cpu, cpu, equal_nan=True)
            held = needs.hold_until > now
            may_plan = left > s.reserved_changes
            new_memory = self.memory_step(
                memory, needs.memory[:, k], left > 0, may_plan, moves, held
            )
            self._record(budget, cpu, memory, new_cpu, new_memory, now)
            cpu, memory = new_cpu, new_memory
            cpu_out.append(cpu)
            memory_out.append(memory)
        # what was not measured stays unplanned, whatever is in force
        cpu_need = np.column_stack([needs.cpu[:, :1], needs.cpu])
        memory_need = np.column_stack([needs.memory[:, :1], needs.memory])
        return (
            np.where(np.isnan(cpu_need), np.nan, np.column_stack(cpu_out)),
            np.where(np.isnan(memory_need), np.nan, np.column_stack(memory_out)),
        )

    def _block_in_force(
        self, needs: Needs, cpu: np.ndarray, memory: np.ndarray, budget: ChangeBudget
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rest of the block the history ends in, as the strategy's mid-block step
        sets it: what is in force stays unless a reaction or a memory rise is due; with
        nothing in force, what a boundary would set."""
        s = self.settings
        at = needs.history_end
        may_react = budget.left(at) > 0
        level = cover(needs.cpu, s.hysteresis.cover_blocks)
        with np.errstate(invalid="ignore"):
            short = may_react & (
                needs.recent_low > cpu + s.reactions.react_min_fraction * needs.scale
            )
            wanted = np.fmax(needs.recent_high * (1.0 + s.reactions.react_margin), level)
            raised = short & (wanted > cpu)
        new_cpu = np.where(np.isnan(cpu) & ~np.isnan(level), level, np.where(raised, wanted, cpu))
        held = needs.hold_until > at
        no_fall = np.zeros(len(cpu), dtype=bool)
        new_memory = self.memory_step(memory, needs.memory[:, 0], may_react, no_fall, raised, held)
        self._record(budget, cpu, memory, new_cpu, new_memory, at)
        return new_cpu, new_memory

    @staticmethod
    def _record(
        budget: ChangeBudget,
        cpu: np.ndarray,
        memory: np.ndarray,
        new_cpu: np.ndarray,
        new_memory: np.ndarray,
        now: float,
    ) -> None:
        """A change made at `now` counts against the budget; the first setting does not."""
        moved = ~np.isclose(new_cpu, cpu, equal_nan=True)
        moved |= ~np.isclose(new_memory, memory, equal_nan=True)
        first_setting = np.isnan(cpu) & np.isnan(memory)
        budget.record(moved & ~first_setting, np.zeros(len(cpu)), now)
