"""Recommendations of both models side by side, per workload views and what-ifs.

What `notebooks/analyse_recommendations.ipynb` shows, as frames: the notebook only
chooses its source and draws. Both models run through the library path `tailor
recommend` takes (`recommender.advice`: the rows with current requests, changes and
explanations; `recommender.savings`: the totals), so every number here is the one the
CLI prints for the same history and settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from recommender.advice import advise
from recommender.data.arrays import AGGREGATE_COLUMNS
from recommender.forecast.settings import ForecastSettings
from recommender.overrides import settings_with
from recommender.recommend import WorkloadForecast, forecast_workloads, recommend_vpa
from recommender.savings import (
    Prices,
    current_requests,
    savings_summary,
    with_changes,
    with_current,
)
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

    vpa, forecast: each model's `recommender.advice.advise` rows (bounds, explanation,
    current requests and pods, changes, severity); schedule: the forecaster's next 24 h
    per workload container; bands: per workload container and schedule block, the
    forecast mean CPU and the request that covers it with its margin (the largest over
    the workload's pods, as the schedule takes them)."""

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
    current: pd.DataFrame | None = None,
) -> Recommendations:
    """Both models on one validated history (`step`: the source's sample period, if known),
    as `tailor recommend --strategy vpa` and `--strategy forecast` make them; `current`:
    the requests now as `advise` takes them (a cluster's pods), else the history's."""
    vpa_rows = advise(usage, events, "vpa", vpa=vpa, step=step, current=current, checked=True)
    planned = forecast_workloads(usage, events, forecast, step, checked=True)
    now = current_requests(usage) if current is None else current
    forecast_rows = with_changes(with_current(planned.recommendations, now))
    return Recommendations(
        usage,
        events,
        vpa_rows,
        forecast_rows,
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


def side_by_side(recommendations: Recommendations) -> pd.DataFrame:
    """Per workload container: its pods, the current requests and both models' targets."""
    now = recommendations.vpa[[*KEYS, "pods", "cpu_current", "memory_current"]]
    vpa = recommendations.vpa[[*KEYS, "cpu_target", "memory_target"]]
    forecast = recommendations.forecast[[*KEYS, "cpu_target", "memory_target"]]
    both = vpa.merge(forecast, on=KEYS, how="outer", suffixes=("_vpa", "_forecast"))
    return now.merge(both, on=KEYS, how="right").sort_values(KEYS).reset_index(drop=True)


def savings(recommendations: Recommendations, prices: Prices | None = None) -> pd.DataFrame:
    """`recommender.savings.savings_summary` of each model (the CLI's `--summary`), side by
    side: per namespace, then "total", the columns (model, figure)."""
    parts = {}
    for model, rows in (("vpa", recommendations.vpa), ("forecast", recommendations.forecast)):
        summary = savings_summary(rows, prices)
        summary["namespace"] = summary["namespace"].fillna("total")
        parts[model] = summary.set_index("namespace")
    return pd.concat(parts, axis=1, names=["model", "figure"])


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


def _quantity(value: float, resource: str) -> str:
    if pd.isna(value):
        return "n/a"
    return f"{value:.3f} cores" if resource == "cpu" else f"{value / 2**30:.3f} GiB"


def explanation_markdown(view: WorkloadView) -> str:
    """Each number of `view`'s figure in words: each model's bounds with its own
    explanation, the forecaster's schedule's range, the current requests and the kills."""
    row = view.vpa
    lines = [
        f"**{'/'.join(view.keys)}**",
        "",
        f"- now, per pod ({row['pods']} pod(s)): cpu {_quantity(row['cpu_current'], 'cpu')}, "
        f"memory {_quantity(row['memory_current'], 'memory')}; `vpa` {row['severity']}, "
        f"`forecast` {view.forecast['severity']} (how far the request is from the target).",
    ]
    for resource in ("cpu", "memory"):
        lines.append(
            f"- `vpa` {resource}: target {_quantity(row[f'{resource}_target'], resource)}, "
            f"lower {_quantity(row[f'{resource}_lower'], resource)}, "
            f"upper {_quantity(row[f'{resource}_upper'], resource)}."
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
