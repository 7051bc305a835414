"""Pods' workloads and the events frames of a Prometheus load (pure).

Input frames ("samples") have the key columns, `time` (grid point, UNIX seconds,
int64) and `value` (float64). Window j is [T_j, T_j + step) and its row carries
timestamp T_j, as `recommender.data.arrays` expects.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from tailor.workloads import workload_from_owner

LOG = logging.getLogger(__name__)

KEYS = ["namespace", "pod", "container"]
EVENT_COLUMNS = ["timestamp", "namespace", "pod", "container", "reason", "memory"]


def workloads(owners: pd.DataFrame) -> pd.DataFrame:
    """(namespace, pod) -> workload, from kube_pod_owner: the pod's controller owner
    (`owner_is_controller="true"`), as `tailor.workloads.pod_workload` takes it for the
    live pods; with none marked so, the first owner by kind and name."""
    if owners.empty:
        return pd.DataFrame(columns=["namespace", "pod", "workload"])
    keys = ["namespace", "pod", "owner_kind", "owner_name"]
    controller = owners.get("owner_is_controller", pd.Series("", index=owners.index))
    distinct = owners.assign(other=controller.astype(str) != "true")
    distinct = distinct[~distinct["owner_kind"].isin(["", "<none>"])]
    distinct = distinct.sort_values(["namespace", "pod", "other", "owner_kind", "owner_name"])
    first = distinct.drop_duplicates(["namespace", "pod"])[keys]
    names = [
        workload_from_owner(kind, name)
        for kind, name in zip(first["owner_kind"], first["owner_name"], strict=True)
    ]
    return pd.DataFrame({"namespace": first["namespace"], "pod": first["pod"], "workload": names})


def with_workloads(frame: pd.DataFrame, owners: pd.DataFrame) -> pd.DataFrame:
    """Add the `workload` column, falling back to the pod name for pods with no owner."""
    named = frame.merge(workloads(owners), on=["namespace", "pod"], how="left")
    # object first: with no owner at all the merged column is float NaN, and
    # filling a float column with strings is deprecated in pandas 3.
    named["workload"] = named["workload"].astype(object).fillna(named["pod"]).astype(str)
    return named


def eviction_events(
    evicted: pd.DataFrame, memory: pd.DataFrame, start: int, step: int
) -> pd.DataFrame:
    """An eviction is a grid point where a pod's kube_pod_status_reason Evicted turns 1.

    Every rising edge counts: a StatefulSet pod recreated under its name and evicted
    again is a second eviction (a gap in the series does not make one: an evicted pod
    kept for days, unscraped for a while, is one eviction). A pod showing 1 at its
    first grid point was evicted then, unless that is the range start: pods already
    evicted at the start are not reported again.

    One event per container seen before it, with the peak of its last window wholly
    before the eviction (ending by the grid point before): the window holding the
    eviction also holds the samples of a replacement under the same name. Only when
    the container has no such window since the pod's previous eviction is that one used.
    """
    pods = ["namespace", "pod"]
    series = evicted.sort_values([*pods, "time"], kind="stable").reset_index(drop=True)
    shown = series["value"] == 1
    before = shown.groupby([series[key] for key in pods], sort=False).shift(1, fill_value=False)
    edges = series.loc[shown & ~before.astype(bool), [*pods, "time"]]
    edges = edges.assign(since=edges.groupby(pods, sort=False)["time"].shift(1))
    edges = edges[edges["time"] > start].rename(columns={"time": "evicted"})
    if edges.empty:
        return event_frame(pd.DataFrame(columns=[*KEYS, "time", "memory"]), "Evicted")
    seen = memory.merge(edges, on=pods)
    since = seen["since"].isna() | (seen["time"] >= seen["since"])
    seen = seen[(seen["time"] < seen["evicted"]) & since]
    seen = seen.assign(whole=seen["time"] + 2 * step <= seen["evicted"])
    last = seen.sort_values(["whole", "time"]).groupby([*KEYS, "evicted"], as_index=False).last()
    last["time"] = last["evicted"]
    return event_frame(last, "Evicted")


def event_frame(frame: pd.DataFrame, reason: str) -> pd.DataFrame:
    times = frame["time"].to_numpy(dtype=np.int64)
    out = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(times, unit="s", utc=True),
            "namespace": frame["namespace"].astype(str).to_numpy(),
            "pod": frame["pod"].astype(str).to_numpy(),
            "container": frame["container"].astype(str).to_numpy(),
            "reason": reason,
            "memory": frame["memory"].to_numpy(dtype=np.float64),
        }
    )
    return out[EVENT_COLUMNS]


def combine_events(*parts: pd.DataFrame) -> pd.DataFrame:
    events = pd.concat(parts, ignore_index=True)
    return events.sort_values(["timestamp", *KEYS], kind="stable").reset_index(drop=True)
