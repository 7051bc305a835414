"""The `forecast` strategy: the forecasting recommender plus its update policy.

At every block boundary it re-plans from what it has seen and moves requests along the
plan through the hysteresis of `policy`. Between boundaries it only reacts: CPU after
windows clearly above the request, memory at once after an OOM kill (always answered),
memory riding along with any CPU change, all within the change budget.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data.arrays import UsageArrays
from recommender.forecast.blocks import KnownLevels
from recommender.forecast.margins import LEVEL_EDGES, level_bins
from recommender.forecast.memory import OomHistory, implied_demand
from recommender.forecast.midblock import LullTracker, SpikeTracker
from recommender.forecast.planner import Plan, make_plan
from recommender.forecast.policy import ForecastPolicy, cover
from recommender.forecast.quantiles import gapless_max
from recommender.forecast.settings import DAY, ForecastSettings
from recommender.replay import Fleet, Requests, differs
from tailor.change_budget import ChangeBudget


class UsageBuffer:
    """The last `capacity` windows of CPU and memory usage of every series, visible as a
    contiguous `UsageArrays` without copying: storage is twice the capacity and shifted
    back once full, so appending stays amortised O(series)."""

    def __init__(self, keys: pd.DataFrame, start: int, step: int, capacity: int) -> None:
        self.keys, self.start, self.step, self.capacity = keys, start, step, capacity
        self._cpu = np.full((len(keys), 2 * capacity), np.nan)
        self._memory = np.full((len(keys), 2 * capacity), np.nan)
        self._filled = 0  # columns of storage in use
        self._first_window = 0  # absolute window number of storage column 0
        self.next_window = 0  # absolute number of the next window expected

    def append(self, window: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        """Record window `window`; skipped windows stay NaN."""
        if window < self.next_window:
            raise ValueError(f"window {window} arrives after window {self.next_window - 1}")
        for _ in range(window - self.next_window + 1):
            if self._filled == self._cpu.shape[1]:  # full: shift the last capacity back
                for stored in (self._cpu, self._memory):
                    stored[:, : self.capacity] = stored[:, -self.capacity :]
                    stored[:, self.capacity :] = np.nan
                self._first_window += self._filled - self.capacity
                self._filled = self.capacity
            self._filled += 1
        self._cpu[:, self._filled - 1] = cpu
        self._memory[:, self._filled - 1] = memory
        self.next_window = window + 1

    def raise_latest_memory(self, rows: np.ndarray, memory: np.ndarray) -> None:
        """Lift the last window's memory of `rows` to at least `memory` (bytes)."""
        if self._filled:
            column = self._memory[rows, self._filled - 1]
            self._memory[rows, self._filled - 1] = np.fmax(column, memory)

    def view(self) -> UsageArrays:
        """The remembered windows as usage arrays (a view, do not modify)."""
        begin = max(0, self._filled - self.capacity)
        window0 = self._first_window + begin
        return UsageArrays(
            keys=self.keys,
            start=self.start + window0 * self.step,
            step=self.step,
            cpu=self._cpu[:, begin : self._filled],
            memory=self._memory[:, begin : self._filled],
        )


class ForecastStrategy:
    """Steppable over a block of containers; see `recommender.replay.Strategy`."""

    name = "forecast"

    def __init__(
        self,
        settings: ForecastSettings | None = None,
        levels: KnownLevels | None = None,
    ) -> None:
        """`levels`: true block means that replace the forecasts (the `forecast-perfect`
        backtest reference only)."""
        self.policy = ForecastPolicy(settings or ForecastSettings())
        self.settings = self.policy.settings
        self.known_levels = levels
        self.levels: KnownLevels | None = None
        if levels is not None:
            self.name = "forecast-perfect"
        self.plan: Plan | None = None

    @classmethod
    def perfect(
        cls, future: UsageArrays, settings: ForecastSettings | None = None
    ) -> ForecastStrategy:
        """The perfect-forecast reference: the same policy, handed every block's true mean
        CPU from the block's whole history `future` (see `blocks.KnownLevels`)."""
        settings = settings or ForecastSettings()
        return cls(settings, KnownLevels.of(future, settings.windows_per_block(future.step)))

    def reset(self, fleet: Fleet) -> None:
        s = self.settings
        n = fleet.size
        self.fleet = fleet
        self.period = s.windows_per_block(fleet.step) * fleet.step
        capacity = max(1, round(s.history_days * DAY / fleet.step))
        self.buffer = UsageBuffer(fleet.keys, fleet.start, fleet.step, capacity)
        self.levels = None if self.known_levels is None else self.known_levels.aligned(fleet.keys)
        self.ooms = OomHistory.empty(n)
        self.oom_now = np.zeros(n, dtype=bool)
        self.short_run = np.zeros(n, dtype=np.int64)
        self.last_cpu = np.full(n, np.nan)
        self.changes = ChangeBudget(n, s.max_changes_per_day)
        self.lulls = LullTracker.empty(n)
        self.spikes = SpikeTracker.empty(n)
        self.plan = None

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        self.buffer.append(step, cpu, memory)
        self.last_cpu = cpu.copy()

    def observe_oom(self, step: int, containers: np.ndarray, memory: np.ndarray) -> None:
        when = np.full(containers.shape, float(self.fleet.time_of(step)))
        history = self.buffer.view().memory[containers]
        self.ooms.record(containers, when, memory, self.settings, history)
        # the killed window used more than its capped sample: remember what the kill
        # implies, so the peaks keep it once the hold ends
        self.buffer.raise_latest_memory(containers, implied_demand(memory, self.settings))
        self.oom_now[containers] = True

    def decide(self, step: int, current: Requests) -> Requests:
        s = self.settings
        now = float(self.fleet.time_of(step + 1))
        left = self.changes.left(now)
        may_react = left > 0
        scale = None if self.plan is None else self.plan.calibration.scale
        clearly = 0.0 if scale is None else s.reactions.react_min_fraction * scale
        short = self.last_cpu > current.cpu + clearly
        self.short_run = np.where(short, self.short_run + 1, 0)
        at_boundary = int(now) % self.period == 0
        if at_boundary or self.plan is None:
            view = self.buffer.view()
            self.plan = make_plan(view, self.ooms, s, int(now), self.plan, self.levels)
            offset = 0
        else:
            offset = max(0, int(now // self.period) - self.plan.first_block)
        plan, peak = self.plan, self.plan.calibration.scale
        offset = min(offset, plan.horizon - 1)
        self.lulls.observe(self.last_cpu, peak)
        self.spikes.observe(self.last_cpu)
        required = plan.cpu_required[:, offset:]
        following = plan.shape.batch & s.lulls.follow  # series that follow their lulls
        cpu = current.cpu.copy()
        if at_boundary:
            cpu = self._boundary_cpu(cpu, left, following, offset)
            self.spikes.at_boundary(~np.isclose(cpu, current.cpu, equal_nan=True))
        cpu = np.where(np.isnan(cpu), cover(required, s.hysteresis.cover_blocks), cpu)
        states = plan.cpu_states[:, offset].copy()
        before_reaction = cpu
        cpu, reacted = self._react_cpu(cpu, required, may_react, left, following)
        serving = ~following & np.isnan(self.lulls.dropped_from)
        self.spikes.record_raises(reacted & serving, before_reaction)
        usage_state = level_bins(self.last_cpu[:, None], peak)[:, 0]
        states = np.where(reacted, np.maximum(states, usage_state), states)
        self.lulls.dropped_from[cpu > current.cpu] = np.nan  # a raise ends a lull's drop
        unchanged = np.isclose(cpu, current.cpu)
        dropped = self.lulls.drop(cpu, plan.cpu_idle, following & unchanged, left, peak, s.lulls)
        cpu = np.where(dropped, plan.cpu_idle, cpu)
        may_release = ~following & unchanged
        released, back = self.spikes.release(current.cpu, may_release, left, peak, s.spikes)
        cpu = np.where(released, back, cpu)
        # a new request of an on/off container stays under its busy ceiling (the plan's
        # `cpu_ceiling`) unless the job is using more right now
        capped = ~np.isnan(plan.cpu_ceiling) & ~np.isclose(cpu, current.cpu, equal_nan=True)
        cpu = np.where(capped, np.fmin(cpu, np.fmax(plan.cpu_ceiling, self.last_cpu)), cpu)
        cpu_moves = differs(cpu, current.cpu)
        along = cpu_moves & ~dropped & ~released  # memory follows neither drop nor release
        may_fall = at_boundary & (left > s.reserved_changes)  # a planned memory decrease
        memory = self._memory(current.memory, states, along, may_fall, may_react)
        memory = np.where(self.oom_now, np.fmax(memory, self.ooms.floor), memory)
        resized = differs(memory, current.memory)
        still = resized & ~cpu_moves
        clearly = s.reactions.react_min_fraction * peak
        cpu = self.policy.ride_with_memory(cpu, required, still, self.last_cpu, clearly, ~following)
        self.oom_now[:] = False
        changed = cpu_moves | resized
        self.changes.record(changed, current.cpu, now)
        return Requests(cpu, memory, memory.copy())

    def _boundary_cpu(
        self,
        cpu: np.ndarray,
        left: np.ndarray,
        following: np.ndarray,
        offset: int,
    ) -> np.ndarray:
        """The CPU level a block boundary sets: the plan through the hysteresis, no cut
        worth too little, and the lull and burst holds."""
        s = self.settings
        assert self.plan is not None
        plan = self.plan
        peak = plan.calibration.scale
        planned_cpu = self.policy.boundary_cpu(
            cpu, plan.cpu_required[:, offset:], left, self.last_cpu, peak
        )
        # an on/off container keeps its busy level through a job's dips: the change
        # a cut within the busy band costs is one the next lull drop needs
        in_job = following & (planned_cpu >= LEVEL_EDGES[2] * peak)
        planned_cpu = np.where((planned_cpu < cpu) & in_job, cpu, planned_cpu)
        # an on/off container in a lull, or whose usage is below its request, is
        # raised by a reaction, never by plan: a raise ahead of a forecast job
        # spends a change the next lull drop needs, and a job that does start is
        # answered within a window or two
        in_lull = following & (
            (self.lulls.idle_run >= s.lulls.after_windows) | (self.last_cpu < cpu)
        )
        in_lull |= ~np.isnan(self.lulls.dropped_from) & (self.lulls.idle_run > 0)
        # so is a serving container just back from a burst (once, for this boundary)
        in_lull |= self.spikes.released
        in_lull &= self.short_run == 0  # a drop below the idle usage itself is not kept
        return np.where(in_lull, np.fmin(planned_cpu, cpu), planned_cpu)

    def _memory(
        self,
        current: np.ndarray,
        states: np.ndarray,
        cpu_moves: np.ndarray,
        may_fall: np.ndarray,
        may_react: np.ndarray,
    ) -> np.ndarray:
        """The memory `ForecastPolicy.memory_step` sets, on the plan's level in `states`."""
        now = float(self.fleet.time_of(self.buffer.next_window))
        assert self.plan is not None
        level = self.plan.memory.for_states(states)
        needed = np.where(np.isnan(level), np.nan, np.fmax(level, self.ooms.floor_at(now)))
        held = self.ooms.hold_until > now
        return self.policy.memory_step(current, needed, may_react, may_fall, cpu_moves, held)

    def _react_cpu(
        self,
        cpu: np.ndarray,
        required: np.ndarray,
        may_react: np.ndarray,
        left: np.ndarray,
        following: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Raise CPU after `react_after_windows` windows in a row clearly above the request;
        a serving container's last change waits longer (`spikes.last_change_after`): spent
        on a short burst, it would keep the raise until the budget frees up."""
        s = self.settings
        # after a lull drop, usage clearly above the idle request is a job starting:
        # it is answered after one window (its memory, if dropped too, cannot wait)
        soon = ~np.isnan(self.lulls.dropped_from) & (self.short_run >= 1)
        after = np.full(cpu.shape, s.reactions.react_after_windows)
        last_change = s.spikes.release & ~following & (left <= 1)
        after = np.where(last_change, np.maximum(after, s.spikes.last_change_after), after)
        react = ((self.short_run >= after) | soon) & may_react
        if not react.any():
            return cpu, react
        seen = gapless_max(self.buffer.view().cpu[:, -s.reactions.react_after_windows :])
        assert self.plan is not None
        usage_based = seen * (1.0 + s.reactions.react_margin)
        level = cover(required, s.hysteresis.cover_blocks)
        wanted = np.where(following, usage_based, np.fmax(usage_based, level))
        wanted = self.lulls.restore_level(
            wanted, seen, self.plan.calibration.scale, self.plan.cpu_ceiling
        )
        raised = react & (wanted > cpu)
        self.short_run = np.where(raised, 0, self.short_run)
        return np.where(raised, wanted, cpu), raised
