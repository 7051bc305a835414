"""The library entry point: canonical history in, one recommendation per container out.

This is what the CLI, notebooks and the live recommender call. It groups pods
into (namespace, workload, container) aggregates the way a VPA merges the pods
it selects, feeds the vectorised model, and returns a tidy DataFrame.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.arrays import (
    AGGREGATE_COLUMNS,
    KEY_COLUMNS,
    UsageArrays,
    factorize_rows,
    from_long,
)
from recommender.data.ooms import history_start, oom_kills
from recommender.data.schema import validate_events, validate_usage
from recommender.data.throttling import throttling_notes, with_cpu_demand
from recommender.data.timestamps import unix_seconds
from recommender.forecast.api import BOUND_COLUMNS, ForecastResult, recommend_forecast
from recommender.forecast.explain import with_memory_of
from recommender.forecast.in_force import PLAY_COLUMNS, held_to_budget, requests_in_force
from recommender.forecast.settings import ForecastSettings
from recommender.oom_bumps import series_oom_bumps
from recommender.vpa.model import VpaModel
from recommender.vpa.settings import VpaSettings
from tailor.durations import DAY
from tailor.schedule_file import MAX_AMOUNT

RECOMMENDATION_COLUMNS = (*AGGREGATE_COLUMNS, *BOUND_COLUMNS)
INGEST_CHUNK = 2_000_000

ProgressCallback = Callable[[int, int], None]


def aggregate_index(series: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """Map each (pod, container) series to its (namespace, workload, container) aggregate."""
    return factorize_rows(series, AGGREGATE_COLUMNS)


Keys = tuple[str, str, str]  # namespace, workload, container


def containers_per_pod(aggregates: pd.DataFrame, off: Collection[Keys] = ()) -> np.ndarray:
    """How many containers of a workload share the pod minimum: upstream splits it evenly
    among the containers it recommends for, so those in `off` (mode Off, or no container
    of the VPA's pods, such as a plain init container) take no share."""
    keys = pd.MultiIndex.from_frame(aggregates[["namespace", "workload", "container"]])
    sharing = aggregates[~keys.isin(list(off))] if off else aggregates
    per_workload = sharing.groupby(["namespace", "workload"])["container"].nunique()
    index = pd.MultiIndex.from_frame(aggregates[["namespace", "workload"]])
    shares = per_workload.reindex(index).to_numpy(dtype=np.float64)
    return np.where(np.isnan(shares), 1.0, np.maximum(shares, 1.0))


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
    seconds = unix_seconds(usage["timestamp"])
    order = np.argsort(seconds, kind="stable")
    seconds = seconds[order]
    codes = codes[order]
    cpu = usage["cpu"].to_numpy(dtype=np.float64)[order]
    memory = usage["memory"].to_numpy(dtype=np.float64)[order]
    # the memory a kill reports counts as the request then; a kill before the first
    # sample is dropped: the model had not started (upstream only sees kills while it runs)
    since = history_start(int(seconds[0]), int(seconds[-1])) if seconds.size else None
    ooms = oom_kills(events, series, since)
    # Upstream only accepts an OOM inside the series' current 24 h interval, so
    # samples and OOMs are fed in time order, as the live recommender sees them.
    cuts = np.searchsorted(seconds, ooms.seconds, side="right")
    total = len(seconds)
    done = 0
    boundaries = sorted({*range(INGEST_CHUNK, total, INGEST_CHUNK), *map(int, cuts), total})
    oom_at = 0
    for end in boundaries:
        if end > done:
            model.add_samples(codes[done:end], seconds[done:end], cpu[done:end], memory[done:end])
            done = end
        while oom_at < len(cuts) and cuts[oom_at] <= done:
            kill = slice(oom_at, oom_at + 1)
            model.add_oom(ooms.series[kill], ooms.seconds[kill], ooms.memory[kill])
            oom_at += 1
        if progress is not None:
            progress(done, total)
    return model, aggregates


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
    costs about 0.3 s per million samples. Throttled CPU counts as demand unless not
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


def vpa_rows(
    model: VpaModel,
    aggregates: pd.DataFrame,
    noted: pd.DataFrame | None = None,
    off: Collection[Keys] = (),
) -> pd.DataFrame:
    """The model's recommendation per aggregate, as the rows `recommend_vpa` returns;
    with the throttling of the `noted` usage explained (`with_throttling_notes`); `off`
    containers (mode Off) take no share of the pod minimum."""
    result = model.recommend(containers_per_pod(aggregates, off))
    frame = aggregates.copy()
    frame["cpu_target"] = result.cpu_target
    frame["cpu_lower"] = result.cpu_lower
    frame["cpu_upper"] = result.cpu_upper
    frame["memory_target"] = result.memory_target
    frame["memory_lower"] = result.memory_lower
    frame["memory_upper"] = result.memory_upper
    return frame if noted is None else with_throttling_notes(frame, noted)


def with_throttling_notes(rows: pd.DataFrame, usage: pd.DataFrame) -> pd.DataFrame:
    """`rows` with each throttled aggregate's note appended to its `explanation` (the
    column is added only when some aggregate was throttled)."""
    notes = throttling_notes(usage, AGGREGATE_COLUMNS)
    if notes.empty:
        return rows
    keyed = rows.merge(notes, on=list(AGGREGATE_COLUMNS), how="left")
    said = keyed["explanation"] if "explanation" in keyed else pd.Series(np.nan, keyed.index)
    out = rows.copy()
    out["explanation"] = [
        previous if not isinstance(note, str) else _joined(previous, note)
        for previous, note in zip(said, keyed["throttling"], strict=True)
    ]
    return out


def _joined(previous: object, note: str) -> str:
    return f"{previous}; {note}" if isinstance(previous, str) and previous else note


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
    per series whether its workload's figures are taken from it (see `_active`)."""

    recommendations: pd.DataFrame
    schedule: pd.DataFrame
    arrays: UsageArrays
    result: ForecastResult
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
    kept, quiet = _remembered(usage, settings.history_days)
    if count_throttling:
        kept = with_cpu_demand(kept)
    arrays = from_long(kept, step)
    bumps = series_oom_bumps(arrays.keys, oom_bumps) if oom_bumps is not None else None
    result = recommend_forecast(arrays, events, settings, oom_bumps=bumps)
    active = _active(arrays, settings.residual_days)
    per_series = result.recommendations.loc[active]
    value_columns = list(BOUND_COLUMNS)
    ranked = per_series.sort_values("cpu_target", ascending=False, kind="stable")
    grouped = ranked.groupby(list(AGGREGATE_COLUMNS), sort=False)
    recommendations = grouped[value_columns].max().reset_index()
    recommendations["explanation"] = _workload_explanations(per_series, recommendations)
    if quiet is not None:
        recommendations = pd.concat([recommendations, quiet], ignore_index=True)
    recommendations = recommendations.sort_values(list(AGGREGATE_COLUMNS)).reset_index(drop=True)
    if count_throttling:
        recommendations = with_throttling_notes(recommendations, kept)
    played = pd.concat([result.schedule, result.rules], axis=1)  # the rules it plays
    schedule = (
        played.loc[np.repeat(active, len(played) // arrays.n_series)]
        .groupby([*AGGREGATE_COLUMNS, "start", "end"], sort=True)[
            ["cpu_request", "memory_request", "memory_limit", *PLAY_COLUMNS]
        ]
        .max()
        .reset_index()
    )
    schedule = held_to_budget(schedule, requests_in_force(kept), settings)
    return WorkloadForecast(_rounded(recommendations), _rounded(schedule), arrays, result, active)


def _workload_explanations(per_series: pd.DataFrame, workloads: pd.DataFrame) -> list[str]:
    """Each workload's explanation, said of the pods its figures come from: its CPU
    sentence from the pod with the largest CPU target, its memory sentence from the pod
    with the largest memory target (a killed pod's bump, say, with its OOM hold)."""
    keys = list(AGGREGATE_COLUMNS)

    def leading(column: str) -> pd.Series:
        ranked = per_series.sort_values(column, ascending=False, kind="stable", na_position="last")
        return ranked.groupby(keys, sort=False)["explanation"].first()

    index = pd.MultiIndex.from_frame(workloads[keys])
    by_cpu = leading("cpu_target").reindex(index).astype(str)
    by_memory = leading("memory_target").reindex(index).astype(str)
    return [with_memory_of(cpu, memory) for cpu, memory in zip(by_cpu, by_memory, strict=True)]


def _remembered(usage: pd.DataFrame, days: float) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The samples of the last `days` before the history's end, as the live strategy keeps;
    and a row saying why for each aggregate with none left.

    Older samples carry no weight in a plan, and a stray sample years away stretched
    the forecaster's grid (series x windows) past any memory.
    """
    end = usage["timestamp"].max()
    cutoff = end - pd.Timedelta(days=days)
    recent = (usage["timestamp"] > cutoff).to_numpy()
    if recent.all():
        # the usual case: nothing older to leave out, and no copy of the frame made
        return usage, None
    kept, gone = usage.loc[recent], usage.loc[~recent]
    last = gone.groupby(list(AGGREGATE_COLUMNS), sort=False)["timestamp"].max().reset_index()
    present = pd.MultiIndex.from_frame(kept.loc[:, list(AGGREGATE_COLUMNS)].drop_duplicates())
    last = last[~pd.MultiIndex.from_frame(last.loc[:, list(AGGREGATE_COLUMNS)]).isin(present)]
    return kept, (_unseen(last, end, days) if len(last) else None)


def _unseen(last: pd.DataFrame, end: pd.Timestamp, days: float) -> pd.DataFrame:
    """Rows of NaN figures for aggregates last seen at `last["timestamp"]`, saying so."""
    quiet = last.loc[:, list(AGGREGATE_COLUMNS)].reset_index(drop=True)
    for column in BOUND_COLUMNS:
        quiet[column] = np.nan
    quiet["explanation"] = [
        f"no usage in the {days:g} days before the history's end "
        f"({end:%Y-%m-%d %H:%M} UTC); last sample {seen:%Y-%m-%d %H:%M} UTC: nothing to plan on."
        for seen in last["timestamp"]
    ]
    return quiet


def _active(arrays: UsageArrays, days: float) -> np.ndarray:
    """Per series: whether its workload's figures are taken from it.

    A pod with no sample in the last `days` (one replaced by a rollout) is planned
    on what it last used; its workload takes that only when no pod of it is recent.
    """
    windows = max(1, round(days * DAY / arrays.step))
    unseen = np.isnan(arrays.cpu[:, -windows:]) & np.isnan(arrays.memory[:, -windows:])
    recent = ~unseen.all(axis=1)
    aggregate, aggregates = aggregate_index(arrays.keys)
    any_recent = np.bincount(aggregate, weights=recent, minlength=len(aggregates)) > 0
    return np.asarray(recent | ~any_recent[aggregate])


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    """As the API writes them: CPU up to whole millicores, memory up to whole bytes, and no
    amount past what `tailor follow` can write back (a margin on data near a quantity's
    maximum went past it, and the schedule was refused whole)."""
    out = frame.copy()
    for column in out.columns:
        if column.startswith("cpu_") and out[column].dtype.kind == "f":
            rounded = np.ceil(out[column].to_numpy() * 1000 - 1e-9) / 1000
            out[column] = np.minimum(rounded, MAX_AMOUNT)
        elif column.startswith("memory_") and out[column].dtype.kind == "f":
            out[column] = np.minimum(np.ceil(out[column].to_numpy() - 1e-9), MAX_AMOUNT)
    return out
