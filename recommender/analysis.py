"""Recommendations of both models side by side, per workload views and what-ifs.

What `notebooks/analyse_recommendations.ipynb` shows, as frames: the notebook only
chooses its source and draws. Both models run through the library entry points
`tailor recommend` calls (`recommend_vpa`, `forecast_workloads`), so every number here
is the one the CLI prints for the same history and settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from recommender.data.arrays import AGGREGATE_COLUMNS
from recommender.forecast.settings import ForecastSettings
from recommender.overrides import settings_with
from recommender.recommend import WorkloadForecast, forecast_workloads, recommend_vpa
from recommender.vpa.settings import VpaSettings

KEYS = list(AGGREGATE_COLUMNS)
USAGE_COLUMNS = ("timestamp", "pod", "cpu", "memory", "cpu_request", "memory_request")
#: knob -> (model, setting): what `what_if` can sweep.
KNOBS: dict[str, tuple[str, str]] = {
    "target percentile (vpa)": ("vpa", "target_percentile"),
    "safety margin (vpa)": ("vpa", "safety_margin"),
    "CPU shortfall target (forecast)": ("forecast", "target_cpu_shortfall"),
    "changes per day (forecast)": ("forecast", "max_changes_per_day"),
}


@dataclass(frozen=True)
class Recommendations:
    """Both models' recommendations for one history.

    vpa: `recommend_vpa`'s rows; forecast: `recommend_forecast_workloads`' rows and
    schedule (next 24 h per workload container); bands: per workload container and
    schedule block, the forecast mean CPU and the request that covers it with its
    margin (the largest over the workload's pods, as the schedule takes them)."""

    usage: pd.DataFrame
    events: pd.DataFrame
    vpa: pd.DataFrame
    forecast: pd.DataFrame
    schedule: pd.DataFrame
    bands: pd.DataFrame


def recommend_both(
    usage: pd.DataFrame,
    events: pd.DataFrame,
    vpa: VpaSettings | None = None,
    forecast: ForecastSettings | None = None,
    step: int | None = None,
) -> Recommendations:
    """Both models on one validated history (`step`: the source's sample period, if known)."""
    vpa_rows = recommend_vpa(usage, events, vpa, checked=True)
    planned = forecast_workloads(usage, events, forecast, step, checked=True)
    return Recommendations(
        usage,
        events,
        vpa_rows,
        planned.recommendations,
        planned.schedule,
        forecast_bands(planned),
    )


def forecast_bands(planned: WorkloadForecast) -> pd.DataFrame:
    """Forecast mean CPU and required request (forecast + margin) per workload container and
    block of the coming horizon: the largest over its active pods, block by block."""
    parts = []
    for rows, plan in planned.result.plans:
        keys = planned.arrays.keys.iloc[rows][KEYS].reset_index(drop=True)
        starts = pd.to_datetime(plan.block_starts(), unit="s", utc=True)
        horizon = plan.horizon
        frame = keys.loc[np.repeat(np.arange(len(rows)), horizon)].reset_index(drop=True)
        frame["start"] = np.tile(starts, len(rows))
        frame["end"] = frame["start"] + pd.Timedelta(seconds=plan.period)
        frame["cpu_forecast"] = plan.cpu_forecast.ravel()
        frame["cpu_required"] = plan.cpu_required.ravel()
        frame["active"] = np.repeat(planned.active[rows], horizon)
        parts.append(frame)
    bands = pd.concat(parts, ignore_index=True)
    bands = bands[bands.pop("active")]
    grouped = bands.groupby([*KEYS, "start", "end"], sort=True)
    return grouped[["cpu_forecast", "cpu_required"]].max().reset_index()


def current_requests(usage: pd.DataFrame) -> pd.DataFrame:
    """Requests in force at the history's last sample of each workload container (the
    largest over its pods then); NaN where the history carries none."""
    columns = [column for column in ("cpu_request", "memory_request") if column in usage]
    last = usage.groupby(KEYS, sort=True)["timestamp"].transform("max")
    latest = usage.loc[usage["timestamp"] == last, [*KEYS, *columns]]
    current = latest.groupby(KEYS, sort=True).max().reset_index()
    for column in ("cpu_request", "memory_request"):
        if column not in current:
            current[column] = np.nan
    return current.rename(
        columns={"cpu_request": "cpu_current", "memory_request": "memory_current"}
    )


def side_by_side(recommendations: Recommendations) -> pd.DataFrame:
    """Per workload container: the current requests and both models' targets."""
    vpa = recommendations.vpa[[*KEYS, "cpu_target", "memory_target"]]
    forecast = recommendations.forecast[[*KEYS, "cpu_target", "memory_target"]]
    both = vpa.merge(forecast, on=KEYS, how="outer", suffixes=("_vpa", "_forecast"))
    table = current_requests(recommendations.usage).merge(both, on=KEYS, how="right")
    return table.sort_values(KEYS).reset_index(drop=True)


@dataclass(frozen=True)
class WorkloadView:
    """Everything one workload container's figure shows (`plots.workload_figure`)."""

    keys: tuple[str, str, str]
    usage: pd.DataFrame  # USAGE_COLUMNS of its pods, and memory_limit when known
    vpa: pd.Series  # its recommend_vpa row
    forecast: pd.Series  # its forecast row (with the explanation)
    schedule: pd.DataFrame  # start, end, cpu_request, memory_request, memory_limit
    bands: pd.DataFrame  # start, end, cpu_forecast, cpu_required
    ooms: pd.DataFrame  # timestamp, pod, memory of its OOM kills


def _rows_of(frame: pd.DataFrame, keys: tuple[str, str, str]) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for column, value in zip(KEYS, keys, strict=True):
        mask &= (frame[column] == value).to_numpy()
    return frame.loc[mask]


def workload_view(recommendations: Recommendations, keys: tuple[str, str, str]) -> WorkloadView:
    """The view of workload container `keys` (namespace, workload, container); KeyError
    naming it when the history has no such container."""
    usage = _rows_of(recommendations.usage, keys)
    if usage.empty:
        raise KeyError(f"no container {'/'.join(keys)} in the history")
    wanted = [*USAGE_COLUMNS, *(["memory_limit"] if "memory_limit" in usage else [])]
    events = _rows_of(recommendations.events, keys)
    kills = events.loc[events["reason"] == "OOMKilled", ["timestamp", "pod", "memory"]]
    return WorkloadView(
        keys=keys,
        usage=usage[wanted].sort_values("timestamp").reset_index(drop=True),
        vpa=_rows_of(recommendations.vpa, keys).iloc[0],
        forecast=_rows_of(recommendations.forecast, keys).iloc[0],
        schedule=_rows_of(recommendations.schedule, keys).reset_index(drop=True),
        bands=_rows_of(recommendations.bands, keys).reset_index(drop=True),
        ooms=kills.reset_index(drop=True),
    )


def _totals(frame: pd.DataFrame) -> tuple[float, float]:
    return float(frame["cpu_target"].sum()), float(frame["memory_target"].sum())


def _above_target(usage: pd.DataFrame, rows: pd.DataFrame) -> float:
    """Share of the history's CPU samples above their workload container's CPU target."""
    joined = usage[[*KEYS, "cpu"]].merge(rows[[*KEYS, "cpu_target"]], on=KEYS, how="inner")
    sampled = joined.dropna(subset=["cpu", "cpu_target"])
    return float((sampled["cpu"] > sampled["cpu_target"]).mean()) if len(sampled) else np.nan


def _scheduled_cpu(schedule: pd.DataFrame) -> float:
    """Mean CPU the next 24 h schedule requests, summed over workload containers."""
    length = (schedule["end"] - schedule["start"]).dt.total_seconds()
    weighted = (schedule["cpu_request"] * length).groupby([schedule[c] for c in KEYS]).sum()
    span = length.groupby([schedule[c] for c in KEYS]).sum()
    return float((weighted / span).sum())


def what_if(
    usage: pd.DataFrame,
    events: pd.DataFrame,
    knob: str,
    values: Sequence[float],
    step: int | None = None,
) -> pd.DataFrame:
    """Each value of `knob` (a KNOBS name): the fleet's CPU and memory targets, the share of
    past CPU samples above the CPU target, and (forecast knobs) the mean CPU of the next
    24 h schedule; everything else at its default."""
    if knob not in KNOBS:
        raise KeyError(f"unknown knob {knob!r}; choose one of {', '.join(KNOBS)}")
    model, setting = KNOBS[knob]
    rows: list[dict[str, Any]] = []
    for value in values:
        scheduled = np.nan
        if model == "vpa":
            chosen = recommend_vpa(
                usage,
                events,
                settings_with([f"{setting}={value:g}"], VpaSettings(), "vpa"),
                checked=True,
            )
        else:
            pair = f"{setting}={value:g}"
            settings = settings_with([pair], ForecastSettings(), "forecast")
            planned = forecast_workloads(usage, events, settings, step, checked=True)
            chosen = planned.recommendations
            scheduled = _scheduled_cpu(planned.schedule)
        cpu, memory = _totals(chosen)
        rows.append(
            {
                "knob": knob,
                "value": value,
                "cpu_target_cores": cpu,
                "memory_target_gib": memory / 2**30,
                "cpu_samples_above_target": _above_target(usage, chosen),
                "scheduled_cpu_cores": scheduled,
            }
        )
    return pd.DataFrame(rows)


def knob_defaults() -> dict[str, float]:
    """Each KNOBS name's default value."""
    models = {"vpa": VpaSettings(), "forecast": ForecastSettings()}
    return {knob: getattr(models[model], setting) for knob, (model, setting) in KNOBS.items()}


def namespace_totals(table: pd.DataFrame) -> pd.DataFrame:
    """`side_by_side` summed per namespace and over all (row "all"): CPU (cores) and memory
    (GiB) requested now and by each model, and what each saves against now, counted over
    the containers whose current request is known (the others' savings are unknown)."""
    parts = {}
    for resource, scale, label in (("cpu", 1.0, "cpu"), ("memory", 2.0**30, "memory_gib")):
        now = table[f"{resource}_current"] / scale
        known = now.notna()
        columns = {"now": now}
        for model in ("vpa", "forecast"):
            target = table[f"{resource}_target_{model}"] / scale
            columns[model] = target
            columns[f"saved_{model}"] = (now - target).where(known & target.notna())
        frame = pd.DataFrame(columns)
        frame["namespace"] = table["namespace"]
        per_namespace = frame.groupby("namespace", sort=True).sum(min_count=1)
        per_namespace.loc["all"] = frame.drop(columns="namespace").sum(min_count=1)
        parts[label] = per_namespace
    return pd.concat(parts, axis=1, names=["resource", ""])


def _quantity(value: float, resource: str) -> str:
    if pd.isna(value):
        return "n/a"
    return f"{value:.3f} cores" if resource == "cpu" else f"{value / 2**30:.3f} GiB"


def explanation_markdown(view: WorkloadView, vpa: VpaSettings | None = None) -> str:
    """Each number of `view`'s figure in words: the VPA's bounds and how the model makes
    them, the forecaster's target with its own explanation, and its schedule's range."""
    settings = vpa or VpaSettings()
    lines = [f"**{'/'.join(view.keys)}**", ""]
    for resource in ("cpu", "memory"):
        row = view.vpa
        lines.append(
            f"- `vpa` {resource}: target {_quantity(row[f'{resource}_target'], resource)}, "
            f"lower {_quantity(row[f'{resource}_lower'], resource)}, "
            f"upper {_quantity(row[f'{resource}_upper'], resource)}."
        )
    lines.append(
        f"  The target is the P{settings.target_percentile * 100:g} of the usage histogram "
        f"(samples decay with a half-life of {settings.cpu_half_life / 3600:g} h; memory counts "
        f"each day's peak) plus a {settings.safety_margin:.0%} safety margin; lower and upper "
        f"are the P{settings.lower_percentile * 100:g} and P{settings.upper_percentile * 100:g} "
        "with the same margin, widened while the history is short (upstream's confidence "
        "interval); an OOM kill counts as usage of its memory bumped by "
        f"{settings.oom_bump_ratio - 1:.0%}."
    )
    said = view.vpa.get("explanation")
    if isinstance(said, str) and said:
        lines.append(f"  {said}")
    schedule = view.schedule
    for resource in ("cpu", "memory"):
        lines.append(
            f"- `forecast` {resource}: target "
            f"{_quantity(view.forecast[f'{resource}_target'], resource)}"
            + (
                f"; the next 24 h schedule requests "
                f"{_quantity(schedule[f'{resource}_request'].min(), resource)} to "
                f"{_quantity(schedule[f'{resource}_request'].max(), resource)}, "
                f"changing {_changes(schedule[f'{resource}_request'])} times."
                if len(schedule)
                else "."
            )
        )
    lines.append(f"  {view.forecast.get('explanation', '')}")
    if len(view.ooms):
        last = view.ooms["timestamp"].max()
        lines.append(
            f"- {len(view.ooms)} OOM kill(s) in the history, the last {last:%Y-%m-%d %H:%M} UTC."
        )
    return "\n".join(lines)


def _changes(requests: pd.Series) -> int:
    values = requests.to_numpy()
    return int((values[1:] != values[:-1]).sum()) if len(values) > 1 else 0
