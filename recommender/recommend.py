"""The library entry point: canonical history in, one recommendation per container out.

This is what the CLI, notebooks and the live recommender call: it validates the frames,
feeds the vectorised upstream model or the forecaster, and returns tidy DataFrames, one
row per (namespace, workload, container) aggregate (`recommender.aggregates` merges the
pods the way a VPA does).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.aggregates import (
    BOUND_COLUMNS,
    active_series,
    aggregate_index,
    bounds,
    per_workload_forecast,
    recent_history,
    schedule_frame,
    vpa_rows,
)
from recommender.data.arrays import (
    AGGREGATE_COLUMNS,
    KEY_COLUMNS,
    UsageArrays,
    factorize_rows,
    from_long,
)
from recommender.data.ooms import history_start, oom_kills
from recommender.data.schema import validate_events, validate_usage
from recommender.data.throttling import with_cpu_demand
from recommender.data.timestamps import unix_seconds
from recommender.explanations import planned_reasons
from recommender.forecast.api import Planned, plan_forecast
from recommender.forecast.memory import SeriesBumps
from recommender.forecast.policy import ForecastPolicy
from recommender.forecast.settings import ForecastSettings
from recommender.oom_bumps import series_oom_bumps
from recommender.vpa.feed import SeriesSorted, TimeSorted
from recommender.vpa.model import CHUNK_ROWS, VpaModel
from recommender.vpa.settings import VpaSettings

RECOMMENDATION_COLUMNS = (*AGGREGATE_COLUMNS, *BOUND_COLUMNS)
SERIES_COLUMNS = (*KEY_COLUMNS, *BOUND_COLUMNS, "explanation")  # `recommend_forecast`'s
SCHEDULE_COLUMNS = (*KEY_COLUMNS, "start", "end", "cpu_request", "memory_request", "memory_limit")
INGEST_CHUNK = 2_000_000

ProgressCallback = Callable[[int, int], None]


def fit_vpa_model(
    usage: pd.DataFrame,
    events: pd.DataFrame | None = None,
    settings: VpaSettings | None = None,
    progress: ProgressCallback | None = None,
    *,
    checked: bool = False,
    count_throttling: bool = True,
    oom_bumps: pd.DataFrame | None = None,
) -> tuple[VpaModel, pd.DataFrame]:
    """The upstream-VPA model fed with a canonical usage frame, and its aggregates' keys.

    Row i of the returned frame (namespace, workload, container) is the model's
    aggregate i: what `recommend_vpa` recommends for, and what a checkpoint saves.
    CPU samples count what throttling held back (`throttling`) unless not
    `count_throttling`: upstream's exact numbers, which see usage only. `oom_bumps`
    (namespace, workload, container, oom_bump_ratio, oom_min_bump; NaN: the settings')
    are a VPA's own `oomBumpUpRatio` / `oomMinBumpUp` (`recommender.oom_bumps`).
    """
    if not checked:
        usage, events = _checked(usage, events)
    if count_throttling:
        usage = with_cpu_demand(usage)
    settings = settings or VpaSettings()
    codes, series = factorize_rows(usage, KEY_COLUMNS)
    to_aggregate, aggregates = aggregate_index(series)
    model = VpaModel(to_aggregate, len(aggregates), settings)
    if oom_bumps is not None:
        model.use_oom_bumps(*series_oom_bumps(series, oom_bumps))
    feed = _time_ordered(
        codes,
        unix_seconds(usage["timestamp"]),
        usage["cpu"].to_numpy(dtype=np.float64),
        usage["memory"].to_numpy(dtype=np.float64),
    )
    # the memory a kill reports counts as the request then; a kill before the first
    # sample is dropped: the model had not started (upstream only sees kills while it runs)
    since = history_start(*feed.span) if feed.rows else None
    ooms = oom_kills(events, series, since)
    # Upstream only accepts an OOM inside the series' current 24 h interval, so
    # samples and OOMs are fed in time order, as the live recommender sees them.
    cuts = feed.rows_until(ooms.seconds)
    total = feed.rows
    done = 0
    boundaries = sorted({*range(INGEST_CHUNK, total, INGEST_CHUNK), *map(int, cuts), total})
    oom_at = 0
    for end in boundaries:
        if end > done:
            model.add_chunks(feed.chunks(done, end, CHUNK_ROWS), end - done > CHUNK_ROWS)
            done = end
        while oom_at < len(cuts) and cuts[oom_at] <= done:
            kill = slice(oom_at, oom_at + 1)
            model.add_oom(ooms.series[kill], ooms.seconds[kill], ooms.memory[kill])
            oom_at += 1
        if progress is not None:
            progress(done, total)
    return model, aggregates


def _time_ordered(
    codes: np.ndarray, seconds: np.ndarray, cpu: np.ndarray, memory: np.ndarray
) -> SeriesSorted | TimeSorted:
    """The rows in time order, as the model is fed: read off a history sorted by series
    (the usual one) without sorting it, else sorted by time."""
    return SeriesSorted.of(codes, seconds, cpu, memory) or TimeSorted.of(
        codes, seconds, cpu, memory
    )


def recommend_vpa(
    usage: pd.DataFrame,
    events: pd.DataFrame | None = None,
    settings: VpaSettings | None = None,
    progress: ProgressCallback | None = None,
    *,
    checked: bool = False,
    count_throttling: bool = True,
    oom_bumps: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Upstream-VPA recommendations for a canonical usage frame.

    The frames are validated first (a notebook's frame has not been through a file
    reader): bad input raises `DataFormatError` naming the row and column.
    `checked=True` skips that for frames a reader returned (`read_usage`, the
    Prometheus source, `demo_fleet`), which validated them already: a second pass
    would cost time in proportion to the samples again. Throttled CPU counts as demand unless not
    `count_throttling` (see `fit_vpa_model`); rows of throttled containers then
    carry an `explanation` saying so. `oom_bumps`: see `fit_vpa_model`.
    """
    model, aggregates = fit_vpa_model(
        usage,
        events,
        settings,
        progress,
        checked=checked,
        count_throttling=count_throttling,
        oom_bumps=oom_bumps,
    )
    return vpa_rows(model, aggregates, noted=usage if count_throttling else None)


def _checked(
    usage: pd.DataFrame, events: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The canonical, normalised frames, or a DataFormatError naming what is wrong."""
    return (
        validate_usage(usage, "usage"),
        None if events is None else validate_events(events, "events"),
    )


@dataclass(frozen=True)
class WorkloadForecast:
    """What `forecast_workloads` computes: the rows `recommend_forecast_workloads` returns,
    and the per-series plan behind them (a notebook draws its forecast and margin).

    series: the planned series (`arrays.keys` row order), `result` their plans, `active`
    per series whether its workload's figures are taken from it (see
    `recommender.aggregates.active_series`)."""

    recommendations: pd.DataFrame
    schedule: pd.DataFrame
    arrays: UsageArrays
    result: Planned
    active: np.ndarray


def recommend_forecast_workloads(
    usage: pd.DataFrame,
    events: pd.DataFrame | None = None,
    settings: ForecastSettings | None = None,
    step: int | None = None,
    *,
    checked: bool = False,
    count_throttling: bool = True,
    oom_bumps: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Forecast recommendations and the 24 h schedule per (namespace, workload, container).

    The forecaster plans each pod's container; pods of one workload share one spec,
    so a workload gets the largest of its pods' values, block by block. `step`
    (seconds) is the sample period when the source knows it (Prometheus); else it
    is inferred from the timestamps. The frames are validated first unless
    `checked`, as for `recommend_vpa`. Only the last `settings.history_days` before
    the history's end are planned on; a workload with no sample in them gets NaN
    figures and an explanation saying when it was last seen. Throttled CPU counts as
    demand, and the explanation says so, unless not `count_throttling`. `oom_bumps`
    (see `fit_vpa_model`) scale the forecaster's bump after a kill (`OomHistory`).
    """
    done = forecast_workloads(
        usage,
        events,
        settings,
        step,
        checked=checked,
        count_throttling=count_throttling,
        oom_bumps=oom_bumps,
    )
    return done.recommendations, done.schedule


def forecast_workloads(
    usage: pd.DataFrame,
    events: pd.DataFrame | None = None,
    settings: ForecastSettings | None = None,
    step: int | None = None,
    *,
    checked: bool = False,
    count_throttling: bool = True,
    oom_bumps: pd.DataFrame | None = None,
) -> WorkloadForecast:
    """`recommend_forecast_workloads`, with the per-series plans kept (see WorkloadForecast)."""
    if not checked:
        usage, events = _checked(usage, events)
    settings = settings or ForecastSettings()
    kept, quiet = recent_history(usage, settings.history_days)
    if count_throttling:
        kept = with_cpu_demand(kept)
    arrays = from_long(kept, step)
    bumps = series_oom_bumps(arrays.keys, oom_bumps) if oom_bumps is not None else None
    policy = ForecastPolicy(settings)
    result = plan_forecast(arrays, events, policy, oom_bumps=bumps)
    active = active_series(arrays, settings.residual_days)
    recommendations, schedule = per_workload_forecast(
        result, arrays, active, kept, quiet, policy, count_throttling=count_throttling
    )
    return WorkloadForecast(recommendations, schedule, arrays, result, active)


@dataclass(frozen=True)
class ForecastResult:
    """What `recommend_forecast` returns.

    recommendations: one row per series, SERIES_COLUMNS then the reasons as columns
        (season, workload_class, model, cpu_margin, ...).
    schedule: one row per (series, block), SCHEDULE_COLUMNS (start and end in UTC), the
        block the history ends in (the one in force) first, then the plan's horizon.
    """

    recommendations: pd.DataFrame
    schedule: pd.DataFrame


def recommend_forecast(
    usage: UsageArrays,
    events: pd.DataFrame | None = None,
    settings: ForecastSettings | None = None,
    workers: int = 1,
    oom_bumps: SeriesBumps | None = None,
) -> ForecastResult:
    """Stable recommendations and the next horizon's schedule for every series of `usage`
    (one per pod's container, not merged per workload), each played from nothing in force
    (see `plan_forecast` for the arguments).

    Series without samples get NaN everywhere; CPU-only data (memory all NaN) gets NaN
    memory figures.
    """
    policy = ForecastPolicy(settings or ForecastSettings())
    planned = plan_forecast(usage, events, policy, workers, oom_bumps)
    cpu, memory = policy.schedule(planned.needs)
    explained, keyed = planned_reasons(planned, usage.keys, policy.settings), len(KEY_COLUMNS)
    found = bounds(planned.needs, cpu, memory, policy.settings)
    frame = pd.concat([explained.iloc[:, :keyed], found, explained.iloc[:, keyed:]], axis=1)
    keys = usage.keys.loc[:, list(KEY_COLUMNS)].reset_index(drop=True)
    return ForecastResult(frame, schedule_frame(keys, planned.needs, cpu, memory))
