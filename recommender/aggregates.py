"""From per-series results to one row per aggregate (namespace, workload, container).

A VPA merges the pods it selects: the upstream model's aggregates are keyed so, and the
forecaster's per-pod plans are merged here into one row per workload container (the
largest of its pods' figures, block by block), with the explanations, the rows of
aggregates no longer seen, and the rounding the API writes. The library entry point
(`recommender.recommend`) and the recommender service both build their rows with it.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection

import numpy as np
import pandas as pd

from recommender.data.arrays import AGGREGATE_COLUMNS, UsageArrays, factorize_rows
from recommender.data.throttling import throttling_notes
from recommender.explanations import planned_reasons, with_memory_of
from recommender.forecast.api import Planned
from recommender.forecast.policy import ForecastPolicy, InForce, Needs
from recommender.forecast.settings import ForecastSettings
from recommender.in_force import OnRecord, requests_in_force
from recommender.vpa.model import VpaModel
from tailor.change_budget import ChangeBudget
from tailor.durations import DAY
from tailor.schedule_file import MAX_AMOUNT

Keys = tuple[str, str, str]  # namespace, workload, container
BOUND_COLUMNS = tuple(f"{r}_{b}" for r in ("cpu", "memory") for b in ("target", "lower", "upper"))


def aggregate_index(series: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """Map each (pod, container) series to its (namespace, workload, container) aggregate."""
    return factorize_rows(series, AGGREGATE_COLUMNS)


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


def per_workload_forecast(
    planned: Planned,
    arrays: UsageArrays,
    active: np.ndarray,
    kept: pd.DataFrame,
    quiet: pd.DataFrame | None,
    policy: ForecastPolicy,
    *,
    count_throttling: bool,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The forecaster's per-series plans merged into one row per aggregate.

    Pods of one workload share one spec, so a workload needs the largest of its
    `active` pods' needs (`active_series`), block by block; its one schedule is played
    from the requests in force in `kept` (the planned history) and rounded as the API
    writes it, and its bounds are that schedule's. `quiet` rows (aggregates with no
    recent sample, from `recent_history`) are appended.
    """
    rows = np.flatnonzero(active)
    group, aggregates = aggregate_index(arrays.keys.iloc[rows])
    needs = planned.needs.rows(rows).merged(group, len(aggregates))
    in_force = _in_force(aggregates, requests_in_force(kept), policy.settings.max_changes_per_day)
    cpu, memory = policy.schedule(needs, in_force)
    schedule = schedule_frame(aggregates, needs, cpu, memory)
    explained = planned_reasons(planned, arrays.keys, policy.settings)
    per_series = explained.iloc[rows].reset_index(drop=True)
    per_series["cpu_target"] = _largest(planned.needs.cpu[rows])
    per_series["memory_target"] = _largest(planned.needs.memory[rows])
    recommendations = pd.concat([aggregates, bounds(needs, cpu, memory, policy.settings)], axis=1)
    recommendations["explanation"] = _workload_explanations(per_series, recommendations)
    if quiet is not None:
        recommendations = pd.concat([recommendations, quiet], ignore_index=True)
    recommendations = recommendations.sort_values(list(AGGREGATE_COLUMNS)).reset_index(drop=True)
    if count_throttling:
        recommendations = with_throttling_notes(recommendations, kept)
    schedule = schedule.sort_values([*AGGREGATE_COLUMNS, "start"], kind="stable")
    return _rounded(recommendations), _rounded(schedule.reset_index(drop=True))


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


def _largest(values: np.ndarray) -> np.ndarray:
    """Each row's largest value, NaN for a row without one."""
    peak = np.max(np.where(np.isnan(values), -np.inf, values), axis=1, initial=-np.inf)
    return np.where(np.isneginf(peak), np.nan, peak)


def _in_force(aggregates: pd.DataFrame, record: OnRecord, cap: int) -> InForce:
    """The requests on `record` for each aggregate, and its changes of the last day as a
    spent budget of `cap` a day (an aggregate with none on record: nothing in force)."""
    keys = list(AGGREGATE_COLUMNS)
    on_record = pd.MultiIndex.from_tuples(record.keys, names=keys)
    rows = on_record.get_indexer(pd.MultiIndex.from_frame(aggregates[keys].astype(str)))
    made = [record.changes[row] if row >= 0 else np.empty(0) for row in rows]
    return InForce(
        np.append(record.cpu, np.nan)[rows],  # -1 (not on record) picks the NaN appended
        np.append(record.memory, np.nan)[rows],
        ChangeBudget.after(made, cap),
    )


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


def recent_history(usage: pd.DataFrame, days: float) -> tuple[pd.DataFrame, pd.DataFrame | None]:
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


def active_series(arrays: UsageArrays, days: float) -> np.ndarray:
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
