"""The published schedule starts from the requests in force and the changes already made.

The live recommender re-plans at every pass. A plan that starts from nothing,
with a fresh change budget, sets its first hour wherever the requirement is that
hour, so the requests the updater follows moved at nearly every re-plan (the demo
fleet, re-planned hourly for two days: 42 to 46 changes per container in 47 h,
where the strategy that is backtested makes at most 6 a day). The backtested
strategy keeps the requests in force and the times of its last changes; this
reads both from the history's own request columns (kube-state-metrics from
Prometheus, `cpu_request` / `memory_request` in a file) and plays the workload's
merged schedule through the same hysteresis and change budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from recommender.data.arrays import AGGREGATE_COLUMNS
from recommender.forecast.mid_block import BlockInForce
from recommender.forecast.schedule import build_schedule
from recommender.forecast.settings import DAY, ForecastSettings
from tailor.change_budget import ChangeBudget

KEYS = list(AGGREGATE_COLUMNS)
REQUESTS = ["cpu_request", "memory_request"]
EPOCH = pd.Timestamp(0, tz="UTC")
# what the plan's own rules need, per block of the merged schedule (a workload's pods
# merge by their largest): the CPU request under which a block rises whatever the
# threshold (`rise_floor`), the recent peak a cut is measured against, the last CPU
# usage, the end of the OOM hold (UNIX seconds) before which memory does not fall, the
# lowest and highest CPU usage a mid-block reaction reads (`mid_block`), and on the
# block in force only, the history's end (UNIX seconds; NaN on the planned blocks)
PLAY_COLUMNS = (
    "cpu_rise_floor",
    "cpu_scale",
    "cpu_usage",
    "memory_hold_until",
    "cpu_recent_low",
    "cpu_recent_high",
    "history_end",
)


@dataclass(frozen=True)
class InForce:
    """Per (namespace, workload, container): the requests in force (NaN = unknown) and
    the UNIX seconds of its request changes over the last day."""

    keys: list[tuple[str, ...]]
    cpu: np.ndarray
    memory: np.ndarray
    changes: list[np.ndarray]


def requests_in_force(usage: pd.DataFrame) -> InForce:
    """What each aggregate asks for at the end of `usage`, and when that changed in the
    last day (only that day is read: older changes no longer count, and the requests
    are on record at every sample where they are known at all).

    Pods of an aggregate share one spec: at each sample the largest request of its
    pods counts (as the merged schedule takes the largest). A change is a sample
    whose CPU or memory request differs from the aggregate's previous known one.
    """
    end = usage["timestamp"].max()
    recent = usage.loc[usage["timestamp"] > end - pd.Timedelta(seconds=DAY)]
    frame = recent.reindex(columns=[*KEYS, "timestamp", *REQUESTS])
    # keys as text: a lookup by key in an index of categorical levels (columnar history)
    # overflows pandas' small codes past 127 names
    frame = frame.astype({key: str for key in KEYS})
    per_sample = frame.groupby([*KEYS, "timestamp"], sort=True)[REQUESTS].max()
    per_sample = per_sample.dropna(how="all")
    # a side not on record at a sample keeps its last value
    filled = per_sample.groupby(level=KEYS, sort=False).ffill()
    before = filled.groupby(level=KEYS, sort=False).shift(1)
    same = np.isclose(filled.to_numpy(), before.to_numpy(), equal_nan=True)
    moved = ~same.all(axis=1) & before.notna().any(axis=1).to_numpy()
    last = filled.groupby(level=KEYS, sort=True).last()
    stamps = pd.DatetimeIndex(per_sample.index.get_level_values("timestamp")[moved], tz="UTC")
    seconds = (stamps - EPOCH) / pd.Timedelta(seconds=1)
    owners = per_sample.index.droplevel("timestamp")[moved]
    made = pd.Series(seconds.to_numpy(), index=owners).groupby(level=KEYS).agg(np.asarray)
    return InForce(
        list(last.index),
        last["cpu_request"].to_numpy(dtype=np.float64),
        last["memory_request"].to_numpy(dtype=np.float64),
        [made.get(key, np.empty(0)) for key in last.index],
    )


def held_to_budget(
    schedule: pd.DataFrame, in_force: InForce, settings: ForecastSettings
) -> pd.DataFrame:
    """The merged schedule played from the requests in force, within the change budget.

    Each block's merged value is what that block needs, played through the thresholds
    and the budget of `build_schedule` as the live strategy's block boundaries would:
    a request rises past `increase_threshold` or under the `PLAY_COLUMNS` rise floor,
    a cut waits for the budget and is not made under the last usage or when small
    against the recent peak, and memory does not fall during an OOM hold. Without
    those columns, only the thresholds apply. An aggregate with no request on record
    starts unset with no change made, as before. The `PLAY_COLUMNS` are not returned.
    """
    columns = [column for column in schedule.columns if column not in PLAY_COLUMNS]
    if schedule.empty:
        return schedule.loc[:, columns]
    rules = [column for column in PLAY_COLUMNS if column in schedule.columns]
    # one row per aggregate (not pivot_table: with dropna=False it would cross every
    # namespace with every workload; with True it drops a CPU-only aggregate's memory)
    grouped = schedule.groupby([*KEYS, "start"], sort=True)
    wide = cast(pd.DataFrame, grouped[[*REQUESTS, *rules]].max().unstack("start"))
    starts = wide["cpu_request"].columns
    period = (starts[1] - starts[0]).total_seconds() if len(starts) > 1 else float(DAY)
    on_record = pd.MultiIndex.from_tuples(in_force.keys, names=KEYS)
    rows = on_record.get_indexer(wide.index)  # -1: no request on record
    current_cpu = np.append(in_force.cpu, np.nan)[rows]  # -1 picks the NaN appended
    current_memory = np.append(in_force.memory, np.nan)[rows]
    made = [in_force.changes[row] if row >= 0 else np.empty(0) for row in rows]
    cpu_need = wide["cpu_request"].to_numpy(dtype=np.float64)
    memory_need = wide["memory_request"].to_numpy(dtype=np.float64)
    block = _block_in_force(wide, starts[0].timestamp())
    lead = 0 if block is None else 1  # the planned blocks start after the block in force
    floor = _per_block(wide, "cpu_rise_floor")
    cpu, memory = build_schedule(
        current_cpu,
        current_memory,
        cpu_need[:, lead:],
        memory_need[:, lead:],
        settings,
        max(1, round(DAY / period)),
        floor=None if floor is None else floor[:, lead:],
        budget=ChangeBudget.after(made, settings.max_changes_per_day),
        start=starts[lead].timestamp(),
        hold_until=_per_series(wide, "memory_hold_until", -np.inf),
        scale=_per_series(wide, "cpu_scale", 0.0),
        usage=_per_series(wide, "cpu_usage", np.nan),
        in_force=block,
    )
    # what was not measured stays unplanned (null), whatever is in force
    cpu = np.where(np.isnan(cpu_need), np.nan, cpu)
    memory = np.where(np.isnan(memory_need), np.nan, memory)
    played = pd.DataFrame(
        {
            "cpu_request": cpu.ravel(),
            "memory_request": memory.ravel(),
            "memory_limit": memory.ravel(),
        },
        index=pd.MultiIndex.from_tuples(
            [(*key, start) for key in wide.index for start in starts], names=[*KEYS, "start"]
        ),
    )
    out = schedule.set_index([*KEYS, "start"])
    out.update(played)
    return out.reset_index().loc[:, columns]


def _block_in_force(wide: pd.DataFrame, start: float) -> BlockInForce | None:
    """The merged schedule's first block as the block in force, if it is one (its
    `history_end` is on record)."""
    ends = _per_block(wide, "history_end")
    if ends is None or np.isnan(ends[:, 0]).all():
        return None
    return BlockInForce(
        start,
        float(np.nanmax(ends[:, 0])),
        _per_series(wide, "cpu_recent_low", np.nan),
        _per_series(wide, "cpu_recent_high", np.nan),
    )


def _per_block(wide: pd.DataFrame, column: str) -> np.ndarray | None:
    """(aggregates, blocks) of a rule column, None when the schedule has none."""
    if column not in wide.columns.get_level_values(0):
        return None
    return wide[column].to_numpy(dtype=np.float64)


def _per_series(wide: pd.DataFrame, column: str, default: float) -> np.ndarray:
    """(aggregates,) of a rule column known per series (the largest over its blocks)."""
    values = _per_block(wide, column)
    if values is None:
        return np.full(len(wide), default)
    seen = ~np.isnan(values).all(axis=1)
    peak = np.max(np.where(np.isnan(values), -np.inf, values), axis=1, initial=-np.inf)
    return np.where(seen, peak, default)
