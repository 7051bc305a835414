"""The batch entry point: every series of a usage history planned once.

`plan_forecast` plans each series with the policy the live strategy runs every block
(`ForecastPolicy`), from the OOM kills it was given as the strategy remembers them, and
says what each plan's schedule must play (`Needs`). Playing and laying out schedules is
the library's (`recommender.aggregates`, `recommender.recommend`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from recommender.data.arrays import UsageArrays
from recommender.data.ooms import history_start, oom_kills
from recommender.forecast.memory import OomHistory, SeriesBumps, implied_demand
from recommender.forecast.planner import Plan, make_plan
from recommender.forecast.policy import ForecastPolicy, Needs
from recommender.forecast.settings import ForecastSettings


@dataclass(frozen=True)
class Planned:
    """Every series planned: (rows, plan) per fleet chunk; each series' `Needs` and OOM
    history in input order."""

    plans: tuple[tuple[np.ndarray, Plan], ...]
    needs: Needs
    ooms: OomHistory


def oom_history(
    usage: UsageArrays,
    events: pd.DataFrame | None,
    settings: ForecastSettings,
    oom_bumps: SeriesBumps | None = None,
) -> tuple[OomHistory, UsageArrays]:
    """The OOM kills of `events` as the planner's OOM history, and `usage` with what
    each kill implies folded into its window, as the live strategy remembers it. A kill
    after the last sample counts (the live recommender would act on it), one before the
    remembered `history_days` does not. `oom_bumps`: a VPA's own (`bump_after_oom`).
    """
    ooms = OomHistory.empty(usage.n_series)
    last = usage.start + (usage.n_windows - 1) * usage.step
    since = history_start(usage.start, last, settings.history_days)
    kills = oom_kills(events, usage.keys, since)
    if not len(kills):
        return ooms, usage
    rows, seconds, memory = kills.series, kills.seconds, kills.memory
    bumps = None if oom_bumps is None else (oom_bumps[0][rows], oom_bumps[1][rows])
    ooms.record(rows, seconds.astype(np.float64), memory, settings, usage.memory[rows], bumps)
    windows = np.clip((seconds - usage.start) // usage.step, 0, usage.n_windows - 1)
    folded = usage.memory.copy()
    np.fmax.at(folded, (rows, windows), implied_demand(memory, settings, bumps))
    return ooms, replace(usage, memory=folded)


def plan_forecast(
    usage: UsageArrays,
    events: pd.DataFrame | None = None,
    policy: ForecastPolicy | None = None,
    workers: int = 1,
    oom_bumps: SeriesBumps | None = None,
) -> Planned:
    """Plan every series of `usage` (see `Planned`), the OOM kills in `events` raising and
    holding memory as in the live strategy (see `oom_history`). Chunks of `chunk_series`
    are planned apart, so results do not depend on `workers`, the threads they run on
    (numpy releases the GIL in the heavy loops)."""
    policy = policy or ForecastPolicy()
    settings = policy.settings
    ooms, usage = oom_history(usage, events, settings, oom_bumps)
    size = settings.chunk_series
    chunks = [np.arange(b, min(b + size, usage.n_series)) for b in range(0, usage.n_series, size)]

    def plan_chunk(rows: np.ndarray) -> tuple[Plan, Needs]:
        part, chunk_ooms = usage.select(rows), ooms.select(rows)
        plan = make_plan(part, chunk_ooms, settings)
        return plan, policy.needs(plan, part, chunk_ooms)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(plan_chunk, chunks))
    return Planned(
        tuple((rows, part[0]) for rows, part in zip(chunks, done, strict=True)),
        Needs.joined([part[1] for part in done]),
        ooms,
    )
