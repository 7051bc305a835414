"""The requests in force and the changes already made, read from the history.

The live recommender re-plans at every pass. A plan that starts from nothing, with a
fresh change budget, sets its first hour wherever the requirement is that hour, so the
requests the updater follows would move at nearly every re-plan. The backtested
strategy keeps the requests in force and the times of its last changes; this reads both
from the history's own request columns (kube-state-metrics from Prometheus,
`cpu_request` / `memory_request` in a file), and the workload's one schedule is played
from them (`ForecastPolicy.schedule`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.arrays import AGGREGATE_COLUMNS
from recommender.forecast.settings import DAY

KEYS = list(AGGREGATE_COLUMNS)
REQUESTS = ["cpu_request", "memory_request"]
EPOCH = pd.Timestamp(0, tz="UTC")


@dataclass(frozen=True)
class OnRecord:
    """Per (namespace, workload, container): the requests in force (NaN = unknown) and
    the UNIX seconds of its request changes over the last day."""

    keys: list[tuple[str, ...]]
    cpu: np.ndarray
    memory: np.ndarray
    changes: list[np.ndarray]


def requests_in_force(usage: pd.DataFrame) -> OnRecord:
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
    return OnRecord(
        list(last.index),
        last["cpu_request"].to_numpy(dtype=np.float64),
        last["memory_request"].to_numpy(dtype=np.float64),
        [made.get(key, np.empty(0)) for key in last.index],
    )
