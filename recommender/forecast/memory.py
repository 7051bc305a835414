"""Memory sizing: a memory limit that is too low kills the container.

So memory is never sized from a forecast mean: it covers the recent peak plus a margin,
an OOM kill raises it at once and holds it, and a decrease needs the recent peaks to
have stayed clearly below the level it leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from recommender.forecast.quantiles import error_quantiles, gapless_max
from recommender.forecast.settings import DAY, HOUR, ForecastSettings
from recommender.vpa.settings import VpaSettings

# Per series (or per kill): a VPA's own OOM bump ratio and minimum bytes, NaN = the settings'.
SeriesBumps = tuple[np.ndarray, np.ndarray]
UPSTREAM_OOM_BUMP_RATIO = VpaSettings().oom_bump_ratio  # upstream's --oom-bump-up-ratio


@dataclass
class OomHistory:
    """What the OOM kills of each series imply, (series,): the `floor` the limit may not
    go below (bytes) until `hold_until`, the `count` of kills and the `last` one."""

    floor: np.ndarray
    hold_until: np.ndarray
    count: np.ndarray
    last: np.ndarray = field(repr=False)

    @classmethod
    def empty(cls, n: int) -> OomHistory:
        return cls(
            np.zeros(n), np.full(n, -np.inf), np.zeros(n, dtype=np.int64), np.full(n, np.nan)
        )

    def record(
        self,
        rows: np.ndarray,
        seconds: np.ndarray,
        memory: np.ndarray,
        settings: ForecastSettings,
        history: np.ndarray,
        bumps: SeriesBumps | None = None,
    ) -> None:
        """OOM kills of `rows` at `seconds` with `memory` in use (bytes): bump and hold.

        A kill only says demand reached the limit, so the limit jumps at least to the
        peak of the remembered `history` (the killed rows' memory windows; none: 0) plus
        the margin: a job that comes back needs what it needed before. A repeat kill
        soon after (new, larger demand) doubles the limit, so finding a new peak costs a
        few kills, not one per bump. `bumps`: see `bump_after_oom`.
        """
        peak_list: list[float] = np.maximum(gapless_max(history), 0.0).tolist()
        firsts = bump_after_oom(np.asarray(memory, dtype=np.float64), settings, bumps).tolist()
        margin = 1.0 + settings.memory_margin
        hold = settings.memory.oom_hold_hours * HOUR
        for row, when, used, peak, first in zip(
            rows.tolist(), seconds.tolist(), memory.tolist(), peak_list, firsts, strict=True
        ):
            bumped = max(first, peak * margin)
            if when - self.last[row] <= REPEAT_SECONDS:  # false after no kill (NaN)
                bumped = max(bumped, used * REPEAT_FACTOR)
            base = self.floor[row] if when < self.hold_until[row] else 0.0
            self.floor[row] = max(base, bumped)
            self.hold_until[row] = max(self.hold_until[row], when + hold)
            self.count[row] += 1
            self.last[row] = np.fmax(self.last[row], when)

    def select(self, rows: np.ndarray) -> OomHistory:
        """The history of some series (a copy)."""
        return OomHistory(*(getattr(self, f.name)[rows].copy() for f in fields(self)))

    def floor_at(self, seconds: float) -> np.ndarray:
        """The floor in force at `seconds` (0 where no hold is active)."""
        return np.where(self.hold_until > seconds, self.floor, 0.0)


def bump_after_oom(
    memory: np.ndarray, settings: ForecastSettings, bumps: SeriesBumps | None = None
) -> np.ndarray:
    """The limit after a kill at `memory` (see `MemorySettings.oom_bump_factor`); the step
    takes the margin too, as upstream's OOM sample does, or a small container's bump
    barely clears the kill. A VPA's own `oomBumpUpRatio` r (`bumps`, per kill; NaN =
    none) scales the factor by r / upstream's default; its `oomMinBumpUp` is the step."""
    m = settings.memory
    ratio, min_bump = (np.nan, np.nan) if bumps is None else bumps
    own_factor = m.oom_bump_factor * ratio / UPSTREAM_OOM_BUMP_RATIO
    factor = np.where(np.isnan(ratio), m.oom_bump_factor, own_factor)
    step = np.where(np.isnan(min_bump), m.oom_bump_min_bytes, min_bump)
    stepped = (memory + step) * (1.0 + settings.memory_margin)
    return np.maximum(memory * factor, stepped)


def implied_demand(
    memory: np.ndarray, settings: ForecastSettings, bumps: SeriesBumps | None = None
) -> np.ndarray:
    """The memory a kill at `memory` implies was needed: the bump without the margin. A
    killed sample stops at the limit; remembered as is, it would size the limit back to
    where the kill happened after the hold (upstream keeps a bumped sample too)."""
    return bump_after_oom(memory, settings, bumps) / (1.0 + settings.memory_margin)


def capped_state_peaks(state_peak: np.ndarray, peak: np.ndarray) -> np.ndarray:
    """A state's peak may lower the limit, never raise it above the overall recent peak:
    a state last seen a week ago does not bring back that week's memory (fmin also takes
    the overall peak where a state has none). (..., bins) from (..., bins) and (...)."""
    return np.fmin(state_peak, np.expand_dims(peak, -1))


def recent_peak(memory: np.ndarray, windows: int) -> np.ndarray:
    """Largest sample of the last `windows` windows per series, NaN when none."""
    peak = gapless_max(memory[:, -windows:])
    return np.where(np.isneginf(peak), np.nan, peak)


@dataclass(frozen=True)
class MemoryPlan:
    """Memory request (= limit) per coming block and the reasons behind it."""

    required: np.ndarray  # (series, blocks) bytes; NaN = no memory data
    level_by_state: np.ndarray  # (series, states) what the limit should be in each CPU state now
    by_state: np.ndarray  # (series,) bool: sized per CPU state rather than on the overall peak
    peak: np.ndarray  # (series,) highest peak remembered
    state_peak: np.ndarray  # (series, bins) highest peak seen in each CPU state
    extra_oom_per_day: np.ndarray  # (series,) kills per day sizing by state would have added
    state_saving: np.ndarray  # (series,) bytes of limit it would have saved on average
    floor: np.ndarray  # (series,) floor set by OOM kills now (0 = none)

    def for_states(self, states: np.ndarray) -> np.ndarray:
        """The limit each series needs now if its CPU is in `states` (series,)."""
        column = np.clip(states, 0, self.level_by_state.shape[1] - 1)[:, None]
        return np.take_along_axis(self.level_by_state, column, axis=1)[:, 0]


REPEAT_SECONDS = HOUR  # a kill within this time of the previous one escalates
REPEAT_FACTOR = 2.0
STATE_HYSTERESIS = 0.1  # kills per day the state-sizing decision must move by to flip


def _prefix_max(values: np.ndarray) -> np.ndarray:
    """Largest value strictly before each position of the last axis (-inf before the first)."""
    running = np.maximum.accumulate(np.where(np.isnan(values), -np.inf, values), axis=-1)
    out = np.full(values.shape, -np.inf)
    out[..., 1:] = running[..., :-1]
    return out


def _recent_before(blocks: np.ndarray, recent_blocks: int) -> np.ndarray:
    """Per window: the peak of the previous `recent_blocks` blocks and of the block so far."""
    n, count, _per_block = blocks.shape
    block_peak = gapless_max(blocks, axis=2)
    previous = np.full((n, count), -np.inf)
    for back in range(1, recent_blocks + 1):
        previous[:, back:] = np.maximum(previous[:, back:], block_peak[:, :-back])
    return np.maximum(_prefix_max(blocks), previous[:, :, None]).reshape(n, -1)


def _episodes_per_day(exceeds: np.ndarray, days: np.ndarray) -> np.ndarray:
    """Runs of windows above the level, per day: each run costs one kill (the jump covers it)."""
    starts = np.diff(exceeds, axis=1, prepend=False) & exceeds  # above, and not just before
    return starts.sum(axis=1) / days


def _by_state_cost(
    memory: np.ndarray,
    cpu_states: np.ndarray,
    n_bins: int,
    recent_level: np.ndarray,
    per_block: int,
    settings: ForecastSettings,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per series, replayed over its past as the plan sizes: each state's memory peak,
    the extra kills a day sizing by state would have cost, the limit it would have
    lowered on average (bytes), and the days seen."""
    margin = 1.0 + settings.memory_margin
    overall_level = _prefix_max(memory)
    previous = np.full(cpu_states.shape, -1)
    previous[:, 1:] = cpu_states[:, :-1]
    stable = (previous == cpu_states) & (cpu_states >= 0)
    state_peak = np.full((memory.shape[0], n_bins), np.nan)
    quantile = (settings.memory.memory_state_quantile,)
    for k in range(n_bins):
        in_state = np.where(stable & (cpu_states == k), memory, np.nan)
        state_peak[:, k] = error_quantiles(in_state, quantile)[0][:, 0]
    # as the plan does: a state's peak never lifts the level above the overall one,
    # and a state with no peak of its own (a CPU blip too short to be stable) gets it
    state_level = np.take_along_axis(state_peak, np.clip(previous, 0, None), axis=1)
    state_level = np.where(previous < 0, overall_level, np.fmin(state_level, overall_level))
    seen = ~np.isnan(memory)
    seen_windows = seen.sum(axis=1)
    days = np.maximum(seen_windows * settings.update_period_seconds / per_block / DAY, 1e-9)
    peak_limit = margin * np.maximum(overall_level, recent_level)
    state_limit = margin * np.maximum(state_level, recent_level)
    with np.errstate(invalid="ignore"):
        by_peak = seen & (memory > peak_limit)
        by_state_exceeds = seen & (memory > state_limit)
        lowered = np.where(seen & np.isfinite(peak_limit), peak_limit - state_limit, 0.0)
    extra = _episodes_per_day(by_state_exceeds, days) - _episodes_per_day(by_peak, days)
    # the state level is the overall one capped, so `lowered` is never negative
    saving = lowered.sum(axis=1) / np.maximum(seen_windows, 1)
    return state_peak, extra, saving, days


def plan_memory(
    memory: np.ndarray,
    cpu_states: np.ndarray,
    future_states: np.ndarray,
    per_block: int,
    ooms: OomHistory,
    block_starts: np.ndarray,
    now: float,
    settings: ForecastSettings,
    sized_by_state: np.ndarray | None = None,
) -> MemoryPlan:
    """Memory per coming block: the peak of the CPU state (`future_states`) the block is
    forecast in, a state's peak taken over windows that stayed in it (a job's start,
    which a kill covers, does not set it). A series is sized by state only when a
    replay of its past costs at most `oom_tolerance_per_day` more kills than the overall
    peak, net of `oom_worth_bytes` per kill; `sized_by_state` (the last decision) adds
    hysteresis, since every flip would be a resize.
    """
    n, total = memory.shape
    step = round(settings.update_period_seconds / per_block)
    margin = 1.0 + settings.memory_margin
    n_bins = int(max(cpu_states.max(initial=0), future_states.max(initial=0))) + 1
    recent_blocks = max(1, settings.blocks_per(settings.memory.memory_recent_hours * HOUR))
    recent_level = _recent_before(memory.reshape(n, -1, per_block), recent_blocks)
    state_peak, extra, saving, days = _by_state_cost(
        memory, cpu_states, n_bins, recent_level, per_block, settings
    )
    # what sizing by state saves buys some of its kills: `oom_worth_bytes` of limit
    # lowered on average, all day, is worth one kill a day
    net = extra - saving / settings.memory.oom_worth_bytes
    tolerance = settings.memory.oom_tolerance_per_day
    slack = max(STATE_HYSTERESIS, tolerance)
    if sized_by_state is None:
        by_state = net <= tolerance
    else:
        by_state = np.where(sized_by_state, net <= tolerance + slack, net <= tolerance - slack)
    by_state &= days >= 1.0
    peak = recent_peak(memory, max(1, round(settings.memory.memory_peak_days * DAY / step)))
    # a series with no sample in those days (a pod gone quiet) keeps the peak it last had
    peak = np.where(np.isnan(peak), recent_peak(memory, total), peak)
    recent = recent_peak(memory, recent_blocks * per_block)
    per_state = capped_state_peaks(state_peak, peak)
    per_state = np.where(by_state[:, None], per_state, peak[:, None])
    floor_now = ooms.floor_at(now)
    level_by_state = np.fmax(margin * np.fmax(per_state, recent[:, None]), floor_now[:, None])
    level_by_state = np.maximum(level_by_state, settings.min_memory_bytes)
    level_by_state = np.where(np.isnan(peak)[:, None], np.nan, level_by_state)
    horizon = future_states.shape[1]
    base = np.take_along_axis(per_state, np.clip(future_states, 0, n_bins - 1), axis=1)
    recent_part = np.where(np.arange(horizon)[None, :] < recent_blocks, recent[:, None], 0.0)
    required = margin * np.fmax(base, recent_part)
    holding = ooms.floor[:, None] * (ooms.hold_until[:, None] > block_starts[None, :])
    required = np.fmax(required, holding)
    required = np.maximum(required, settings.min_memory_bytes)
    required = np.where(np.isnan(peak)[:, None], np.nan, required)
    return MemoryPlan(
        required=required,
        level_by_state=level_by_state,
        by_state=by_state,
        peak=peak,
        state_peak=state_peak,
        extra_oom_per_day=extra,
        state_saving=saving,
        floor=floor_now,
    )
