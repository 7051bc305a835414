"""The batch entry point: usage history in, recommendations and a 24 h schedule out.

`plan_forecast` plans every series once with the policy the live strategy runs every
block (`ForecastPolicy`), and says what each plan's schedule must play (`Needs`).
`recommend_forecast` plays each series' schedule from nothing in force;
`recommender.aggregates` plays one per workload from its requests in force. Either way
the schedule is laid out as a stable recommendation in the VPA API's shape (target,
lowerBound, upperBound), a drop-in for the upstream recommender, and as the requests per
update period the updater applies in place.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from recommender.data.arrays import KEY_COLUMNS, UsageArrays
from recommender.data.ooms import history_start, oom_kills
from recommender.forecast.explain import reasons
from recommender.forecast.memory import OomHistory, SeriesBumps, implied_demand
from recommender.forecast.planner import Plan
from recommender.forecast.policy import ForecastPolicy, Needs
from recommender.forecast.settings import ForecastSettings

BOUND_COLUMNS = tuple(f"{r}_{b}" for r in ("cpu", "memory") for b in ("target", "lower", "upper"))
RECOMMENDATION_COLUMNS = (*KEY_COLUMNS, *BOUND_COLUMNS, "explanation")
SCHEDULE_COLUMNS = (*KEY_COLUMNS, "start", "end", "cpu_request", "memory_request", "memory_limit")


@dataclass(frozen=True)
class Planned:
    """Every series planned by `plan_forecast`.

    plans: (rows, plan) per fleet chunk (rows index the input series); needs: what each
    series' schedule plays, in input order; reasons: per series, KEY_COLUMNS, the
    explanation and its facts as columns (season, workload_class, model, ...).
    """

    plans: tuple[tuple[np.ndarray, Plan], ...]
    needs: Needs
    reasons: pd.DataFrame


@dataclass(frozen=True)
class ForecastResult:
    """What `recommend_forecast` returns.

    recommendations: one row per series, RECOMMENDATION_COLUMNS then the reasons as
        columns (season, workload_class, model, cpu_margin, ...).
    schedule: one row per (series, block), SCHEDULE_COLUMNS (start and end in UTC), the
        block the history ends in (the one in force) first, then the plan's horizon.
    """

    recommendations: pd.DataFrame
    schedule: pd.DataFrame


def oom_history(
    usage: UsageArrays,
    events: pd.DataFrame | None,
    settings: ForecastSettings,
    oom_bumps: SeriesBumps | None = None,
) -> tuple[OomHistory, UsageArrays]:
    """The OOM kills of `events` as the planner's OOM history, and `usage` with what
    each kill implies (`implied_demand`) folded into the window it fell in, as the live
    strategy remembers it.

    Kills are matched to series as `recommend_vpa` matches them (`oom_kills`); one after
    the history's last sample counts (the live recommender would act on it), one from
    before the remembered `history_days` does not. `oom_bumps` (ratio, minimum bytes per
    series; NaN = the settings') are a VPA's own `oomBumpUpRatio` / `oomMinBumpUp`.
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


def bounds(needs: Needs, cpu: np.ndarray, memory: np.ndarray, s: ForecastSettings) -> pd.DataFrame:
    """target / lower / upper per unit from its schedule's horizon (the block in force,
    the first column, only plays what is in force): the highest and lowest request
    planned, and above the target, the recent peak with the headroom a rise waits for."""
    horizon_cpu, horizon_memory = cpu[:, 1:], memory[:, 1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cpu_target = np.nanmax(horizon_cpu, axis=1)
        memory_target = np.nanmax(horizon_memory, axis=1)
        return pd.DataFrame(
            {
                "cpu_target": cpu_target,
                "cpu_lower": np.nanmin(horizon_cpu, axis=1),
                "cpu_upper": np.fmax(cpu_target, needs.cpu_peak)
                * (1.0 + s.hysteresis.increase_threshold),
                "memory_target": memory_target,
                "memory_lower": np.nanmin(horizon_memory, axis=1),
                "memory_upper": np.fmax(memory_target, needs.memory_peak * (1.0 + s.memory_margin)),
            }
        )


def schedule_frame(
    keys: pd.DataFrame, needs: Needs, cpu: np.ndarray, memory: np.ndarray
) -> pd.DataFrame:
    """The schedule as a long table: `keys` (one row per unit) then start, end and the
    requests of each block (the block in force first)."""
    n, blocks = cpu.shape
    planned = needs.first_start + needs.period * np.arange(blocks - 1)
    starts = np.concatenate([[needs.block_start], planned]).astype(np.int64)
    frame = keys.loc[np.repeat(np.arange(n), blocks)].reset_index(drop=True)
    start = pd.to_datetime(np.tile(starts, n), unit="s", utc=True)
    frame["start"] = start
    frame["end"] = start + pd.Timedelta(seconds=needs.period)
    frame["cpu_request"] = cpu.ravel()
    frame["memory_request"] = memory.ravel()
    frame["memory_limit"] = memory.ravel()
    return frame


def _chunk(
    usage: UsageArrays, ooms: OomHistory, rows: np.ndarray, policy: ForecastPolicy
) -> tuple[Plan, Needs, pd.DataFrame]:
    """Plan and explain one chunk of series (one fleet for the allocation)."""
    part, chunk_ooms = usage.select(rows), ooms.select(rows)
    plan = policy.plan(part, chunk_ooms)
    keys = part.keys.loc[:, list(KEY_COLUMNS)].reset_index(drop=True)
    explained = pd.concat([keys, reasons(plan, chunk_ooms, policy.settings)], axis=1)
    return plan, policy.needs(plan, part, chunk_ooms), explained


def plan_forecast(
    usage: UsageArrays,
    events: pd.DataFrame | None = None,
    policy: ForecastPolicy | None = None,
    workers: int = 1,
    oom_bumps: SeriesBumps | None = None,
) -> Planned:
    """Plan every series of `usage` (see `Planned`).

    events: optional canonical events table; OOM kills raise and hold memory as in the
    live strategy. Series are planned in fixed chunks of `settings.chunk_series` (each
    chunk is one fleet for the shortfall allocation), so results do not depend on
    `workers`, the number of threads the chunks run on (numpy releases the GIL in the
    heavy loops). `oom_bumps`: see `oom_history`.
    """
    policy = policy or ForecastPolicy()
    settings = policy.settings
    ooms, usage = oom_history(usage, events, settings, oom_bumps)
    size = settings.chunk_series
    chunks = [np.arange(b, min(b + size, usage.n_series)) for b in range(0, usage.n_series, size)]
    if workers > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(lambda rows: _chunk(usage, ooms, rows, policy), chunks))
    else:
        done = [_chunk(usage, ooms, rows, policy) for rows in chunks]
    return Planned(
        tuple((rows, part[0]) for rows, part in zip(chunks, done, strict=True)),
        Needs.joined([part[1] for part in done]),
        pd.concat([part[2] for part in done], ignore_index=True),
    )


def recommend_forecast(
    usage: UsageArrays,
    events: pd.DataFrame | None = None,
    settings: ForecastSettings | None = None,
    workers: int = 1,
    oom_bumps: SeriesBumps | None = None,
) -> ForecastResult:
    """Stable recommendations and the next horizon's schedule for every series of `usage`,
    each played from nothing in force (see `plan_forecast` for the arguments).

    Series without samples get NaN everywhere; CPU-only data (memory all NaN) gets NaN
    memory figures.
    """
    policy = ForecastPolicy(settings or ForecastSettings())
    planned = plan_forecast(usage, events, policy, workers, oom_bumps)
    cpu, memory = policy.schedule(planned.needs)
    explained, keyed = planned.reasons, len(KEY_COLUMNS)
    found = bounds(planned.needs, cpu, memory, policy.settings)
    frame = pd.concat([explained.iloc[:, :keyed], found, explained.iloc[:, keyed:]], axis=1)
    keys = usage.keys.loc[:, list(KEY_COLUMNS)].reset_index(drop=True)
    return ForecastResult(frame, schedule_frame(keys, planned.needs, cpu, memory))
