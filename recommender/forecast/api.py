"""The batch entry point: usage history in, recommendations and a 24 h schedule out.

`recommend_forecast` is what `tailor recommend --strategy forecast` and
`tailor schedule` call. It plans every series once from the history it is given
(the same planner the live strategy runs every block), then lays the plan out
two ways: a stable recommendation in the VPA API's shape (target, lowerBound,
upperBound), a drop-in for the upstream recommender, and the schedule of
requests per update period that the updater applies in place.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from recommender.data.arrays import KEY_COLUMNS, UsageArrays
from recommender.data.ooms import history_start, oom_kills
from recommender.forecast.explain import explain, explanation_columns
from recommender.forecast.in_force import PLAY_COLUMNS
from recommender.forecast.memory import OomHistory, SeriesBumps, implied_demand
from recommender.forecast.mid_block import BlockInForce, block_in_force
from recommender.forecast.planner import Plan, make_plan
from recommender.forecast.schedule import build_schedule, rise_floor
from recommender.forecast.settings import DAY, ForecastSettings

BOUND_COLUMNS = (
    "cpu_target",
    "cpu_lower",
    "cpu_upper",
    "memory_target",
    "memory_lower",
    "memory_upper",
)
RECOMMENDATION_COLUMNS = (*KEY_COLUMNS, *BOUND_COLUMNS, "explanation")
SCHEDULE_COLUMNS = (
    *KEY_COLUMNS,
    "start",
    "end",
    "cpu_request",
    "memory_request",
    "memory_limit",
)


@dataclass(frozen=True)
class ForecastResult:
    """What `recommend_forecast` returns.

    recommendations: one row per series, RECOMMENDATION_COLUMNS then the reasons
        as columns (season, workload_class, model, cpu_margin, ...).
    schedule: long table, one row per (series, block), SCHEDULE_COLUMNS; start
        and end are UTC timestamps. The first block of each series is the one the
        history ends in (the block in force, `mid_block`), then the plan's horizon.
    plans: (rows, plan) per fleet chunk: the raw per-series arrays behind both
        (rows index the input series).
    rules: the `PLAY_COLUMNS` of each row of `schedule` (same index), what
        replaying it from the requests in force needs (see `in_force.held_to_budget`).
    """

    recommendations: pd.DataFrame
    schedule: pd.DataFrame
    plans: tuple[tuple[np.ndarray, Plan], ...]
    rules: pd.DataFrame


def oom_history(
    usage: UsageArrays,
    events: pd.DataFrame | None,
    settings: ForecastSettings,
    oom_bumps: SeriesBumps | None = None,
) -> tuple[OomHistory, UsageArrays]:
    """OOM kills from an events table (reason "OOMKilled") as the planner's OOM history,
    and the usage with what each kill implies (`implied_demand`) folded into the
    window it fell in (the last one for a kill after the history), as the live
    strategy remembers it.

    Events are matched to series as `recommend_vpa` matches them (`oom_kills`), and
    as there, a kill after the history's last sample counts: it is the latest news
    (the live recommender would act on it). Kills of unknown series are ignored, and
    so are kills from before the `history_days` the forecaster remembers.
    `oom_bumps` (ratio, minimum bytes per series; NaN = the settings') are a VPA's
    own `oomBumpUpRatio` / `oomMinBumpUp` (`bump_after_oom`).
    """
    ooms = OomHistory.empty(usage.n_series)
    last = usage.start + (usage.n_windows - 1) * usage.step
    since = history_start(usage.start, last, settings.history_days)
    kills = oom_kills(events, usage.keys, since)
    if not len(kills):
        return ooms, usage
    rows, seconds, memory = kills.series, kills.seconds, kills.memory
    peaks = np.max(np.where(np.isnan(usage.memory), -np.inf, usage.memory), axis=1)
    bumps = None if oom_bumps is None else (oom_bumps[0][rows], oom_bumps[1][rows])
    at = seconds.astype(np.float64)
    ooms.record(rows, at, memory, settings, np.maximum(peaks[rows], 0.0), bumps=bumps)
    windows = np.clip((seconds - usage.start) // usage.step, 0, usage.n_windows - 1)
    folded = usage.memory.copy()
    np.fmax.at(folded, (rows, windows), implied_demand(memory, settings, bumps))
    return ooms, replace(usage, memory=folded)


def _stable(
    plan: Plan, cpu: np.ndarray, memory: np.ndarray, usage: UsageArrays, s: ForecastSettings
) -> pd.DataFrame:
    """target / lower / upper per series from the schedule (see the module docstring)."""
    with np.errstate(invalid="ignore"):
        recent_cpu = np.max(np.where(np.isnan(usage.cpu), -np.inf, usage.cpu), axis=1)
    recent_cpu = np.where(np.isfinite(recent_cpu), recent_cpu, np.nan)
    cpu_target = np.nanmax(np.where(np.isnan(cpu), -np.inf, cpu), axis=1)
    cpu_target = np.where(np.isfinite(cpu_target), cpu_target, np.nan)
    cpu_lower = np.nanmin(np.where(np.isnan(cpu), np.inf, cpu), axis=1)
    cpu_lower = np.where(np.isfinite(cpu_lower), cpu_lower, np.nan)
    cpu_upper = np.fmax(cpu_target, recent_cpu) * (1.0 + s.increase_threshold)
    memory_target = np.max(np.where(np.isnan(memory), -np.inf, memory), axis=1)
    memory_target = np.where(np.isfinite(memory_target), memory_target, np.nan)
    memory_lower = np.min(np.where(np.isnan(memory), np.inf, memory), axis=1)
    memory_lower = np.where(np.isfinite(memory_lower), memory_lower, np.nan)
    memory_upper = np.fmax(memory_target, plan.memory.peak * (1.0 + s.memory_margin))
    return pd.DataFrame(
        {
            "cpu_target": cpu_target,
            "cpu_lower": cpu_lower,
            "cpu_upper": cpu_upper,
            "memory_target": memory_target,
            "memory_lower": memory_lower,
            "memory_upper": memory_upper,
        }
    )


def _schedule_frame(
    keys: pd.DataFrame, plan: Plan, block: BlockInForce, cpu: np.ndarray, memory: np.ndarray
) -> pd.DataFrame:
    n, horizon = cpu.shape
    starts = np.concatenate([[int(block.start)], plan.block_starts()])
    frame = keys.loc[np.repeat(np.arange(n), horizon), list(KEY_COLUMNS)].reset_index(drop=True)
    start = pd.to_datetime(np.tile(starts, n), unit="s", utc=True)
    frame["start"] = start
    frame["end"] = start + pd.Timedelta(seconds=plan.period)
    frame["cpu_request"] = cpu.ravel()
    frame["memory_request"] = memory.ravel()
    frame["memory_limit"] = memory.ravel()
    return frame


def _rules(
    floor: np.ndarray, plan: Plan, ooms: OomHistory, usage: np.ndarray, block: BlockInForce
) -> pd.DataFrame:
    """The `PLAY_COLUMNS` per (series, block), in the schedule frame's row order (the
    block in force first: no rise floor there, and the history's end only there)."""
    n, blocks = floor.shape[0], plan.horizon + 1
    unknown = np.full((n, 1), np.nan)
    floors = np.column_stack([unknown, floor])
    end = np.column_stack([np.full(n, block.at), np.full((n, plan.horizon), np.nan)])
    per_series = (
        plan.calibration.scale,
        usage,
        ooms.hold_until,
        block.recent_low,
        block.recent_high,
    )
    columns = [floors.ravel(), *(np.repeat(values, blocks) for values in per_series), end.ravel()]
    return pd.DataFrame(dict(zip(PLAY_COLUMNS, columns, strict=True)))


def _chunk(
    usage: UsageArrays, ooms: OomHistory, rows: np.ndarray, settings: ForecastSettings
) -> tuple[pd.DataFrame, pd.DataFrame, Plan, pd.DataFrame]:
    """Plan, schedule and explain one chunk of series (one fleet for the allocation)."""
    part = usage.select(rows)
    chunk_ooms = ooms.select(rows)
    plan = make_plan(part, chunk_ooms, settings)
    blocks_per_day = max(1, round(DAY / plan.period))
    unset = np.full(part.n_series, np.nan)
    floor = rise_floor(plan.cpu_forecast, plan.cpu_margin, settings)
    last_cpu = part.cpu[:, -1] if part.n_windows else unset
    block = block_in_force(part, plan.period, settings)
    cpu, memory = build_schedule(
        unset,
        unset,
        plan.cpu_required,
        plan.memory.required,
        settings,
        blocks_per_day,
        floor,
        plan.cpu_committed,
        hold_until=chunk_ooms.hold_until,
        scale=plan.calibration.scale,
        usage=last_cpu,
        in_force=block,
    )
    keys = part.keys.reset_index(drop=True)
    # the recommendation is the plan's: the block in force only plays what is in force
    stable = _stable(plan, cpu[:, 1:], memory[:, 1:], part, settings)
    frame = pd.concat(
        [keys.loc[:, list(KEY_COLUMNS)], stable, explanation_columns(plan, chunk_ooms, settings)],
        axis=1,
    )
    frame.insert(len(KEY_COLUMNS) + 6, "explanation", explain(plan, chunk_ooms, settings))
    rules = _rules(floor, plan, chunk_ooms, last_cpu, block)
    return frame, _schedule_frame(keys, plan, block, cpu, memory), plan, rules


def recommend_forecast(
    usage: UsageArrays,
    events: pd.DataFrame | None = None,
    settings: ForecastSettings | None = None,
    workers: int = 1,
    oom_bumps: SeriesBumps | None = None,
) -> ForecastResult:
    """Stable recommendations and the next horizon's schedule for every series of `usage`.

    events: optional canonical events table; OOM kills raise and hold memory as
    in the live strategy. Series without samples get NaN everywhere; CPU-only
    data (memory all NaN) gets NaN memory figures. Series are planned in fixed
    chunks of `settings.chunk_series` (each chunk is one fleet for the shortfall
    allocation), so results do not depend on `workers`, the number of threads
    the chunks run on (numpy releases the GIL in the heavy loops). `oom_bumps`: see
    `oom_history`.
    """
    settings = settings or ForecastSettings()
    ooms, usage = oom_history(usage, events, settings, oom_bumps)
    size = settings.chunk_series
    chunks = [np.arange(b, min(b + size, usage.n_series)) for b in range(0, usage.n_series, size)]
    if workers > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(lambda rows: _chunk(usage, ooms, rows, settings), chunks))
    else:
        done = [_chunk(usage, ooms, rows, settings) for rows in chunks]
    recommendations = pd.concat([part[0] for part in done], ignore_index=True)
    schedule = pd.concat([part[1] for part in done], ignore_index=True)
    plans = tuple((rows, part[2]) for rows, part in zip(chunks, done, strict=True))
    rules = pd.concat([part[3] for part in done], ignore_index=True)
    return ForecastResult(recommendations, schedule, plans, rules)
