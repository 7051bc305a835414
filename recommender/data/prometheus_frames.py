"""Turn raw query_range results into the canonical usage and events frames (pure).

Input frames ("samples") have the key columns, `time` (grid point, UNIX seconds,
int64) and `value` (float64). Window j of the output is [T_j, T_j + step) and
its row carries timestamp T_j, as `recommender.data.arrays` expects.

CPU is computed from the raw counter, not with rate(): rate()/increase()
extrapolate to the window bounds and so disagree with the true average whenever
samples are not exactly on them. Here the counter value and its sample time at
consecutive grid points give (v2 - v1) / (t2 - t1): exactly the average over the
interval between the two samples, and exactly the window average when samples
sit on the grid (a backfill, or a scrape aligned with the step).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from recommender.data.schema import CEILINGS, RESOURCE_COLUMNS, THROTTLED_COLUMN, USAGE_COLUMNS
from tailor.workloads import workload_from_owner

LOG = logging.getLogger(__name__)

KEYS = ["namespace", "pod", "container"]
EVENT_COLUMNS = ["timestamp", "namespace", "pod", "container", "reason", "memory"]


def samples_frame(label_columns: list[str]) -> pd.DataFrame:
    """An empty samples frame with the given label columns."""
    columns: dict[str, pd.Series] = {c: pd.Series([], dtype=object) for c in label_columns}
    columns["time"] = pd.Series([], dtype=np.int64)
    columns["value"] = pd.Series([], dtype=np.float64)
    return pd.DataFrame(columns)


def _plausible(frame: pd.DataFrame, column: str, what: str) -> pd.DataFrame:
    """`frame` without rows whose `column` no container can have, with a warning.

    An exporter glitch (+Inf, a negative gauge, 1e300 bytes) in one sample used to
    fail the whole load in validation; the window holding it is dropped instead,
    as a gap would be. NaN is no value (left to the caller), not a glitch. The
    ceiling is the schema's, per resource (a `resource` column, else `column`).
    """
    values = frame[column].to_numpy(dtype=np.float64)
    resources = frame["resource"] if "resource" in frame else pd.Series(column, frame.index)
    ceiling = resources.map(lambda name: CEILINGS[name.split("_")[0]][0]).to_numpy(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(values) & ~((values >= 0) & (values <= ceiling))
    if bad.any():
        first = frame.loc[bad].iloc[0]
        LOG.warning(
            "skipped %d %s value(s) no container can have (infinite, negative or above what "
            "a Kubernetes quantity holds), e.g. %g for %s/%s/%s at %s",
            int(bad.sum()),
            what,
            first[column],
            first["namespace"],
            first["pod"],
            first["container"],
            pd.Timestamp(int(first["time"]), unit="s", tz="UTC").isoformat(),
        )
    return frame.loc[~bad]


def _next_in_series(frame: pd.DataFrame, keys: list[str], step: int) -> pd.DataFrame:
    """Pair each grid point with the same series' next grid point (dropping gaps)."""
    frame = frame.sort_values([*keys, "time"], kind="stable").reset_index(drop=True)
    following = frame.groupby(keys, sort=False).shift(-1)
    paired = frame.join(following.add_suffix("_next"))
    return paired[paired["time_next"] == paired["time"] + step]


def cpu_windows(
    counter: pd.DataFrame,
    stamps: pd.DataFrame,
    step: int,
    resets: pd.DataFrame,
    lows: pd.DataFrame,
    column: str = "cpu",
) -> pd.DataFrame:
    """Average cores per window from counter values and their sample times (usage, or
    with `column="cpu_throttled"` the CPU-seconds a CPU limit held back).

    Windows where the counter was reset (a restart) or did not advance in time
    (a finished container still inside the lookback) are left out: their usage is
    unknown. A reset shows as a decrease of the two values, as `resets` (counted
    up to the window's end) or as a sample below the start value in `lows`: a
    restarted container whose new counter overtook the old value would otherwise
    pass for one that used only the difference.
    """
    both = counter.merge(stamps.rename(columns={"value": "at"}), on=[*KEYS, "time"])
    paired = _next_in_series(both, KEYS, step)
    ends = resets.rename(columns={"value": "resets"}).merge(
        lows.rename(columns={"value": "low"}), on=[*KEYS, "time"]
    )
    ends["time"] = ends["time"] - step  # the range ending at T_j+1 is window j
    paired = paired.merge(ends, on=[*KEYS, "time"], how="left")
    increase = paired["value_next"] - paired["value"]
    elapsed = paired["at_next"] - paired["at"]
    unbroken = (paired["resets"] == 0) & (paired["low"] >= paired["value"])
    valid = (increase >= 0) & (elapsed > 0) & unbroken
    out = paired.loc[valid, [*KEYS, "time"]].copy()
    out[column] = (increase[valid] / elapsed[valid]).astype(np.float64)
    return _plausible(out, column, "cpu")


def memory_windows(peaks: pd.DataFrame, step: int) -> pd.DataFrame:
    """Peak working set per window: the value at T covers the window [T - step, T)."""
    out = peaks.loc[:, [*KEYS, "time"]].copy()
    out["time"] = out["time"] - step
    out["memory"] = peaks["value"].to_numpy(dtype=np.float64)
    return _plausible(out, "memory", "memory")


def resource_columns(requests: pd.DataFrame, limits: pd.DataFrame) -> pd.DataFrame:
    """Requests and limits in force at each window's start, one column per resource."""
    parts = []
    for frame, kind in ((requests, "request"), (limits, "limit")):
        if frame.empty:
            continue
        frame = _plausible(frame, "value", f"resource {kind}")
        wide = frame.pivot_table(
            index=[*KEYS, "time"], columns="resource", values="value", aggfunc="max"
        )
        wide.columns = [f"{resource}_{kind}" for resource in wide.columns]
        parts.append(wide)
    columns = ["cpu_request", "memory_request", "cpu_limit", "memory_limit"]
    if not parts:
        return pd.DataFrame(columns=[*KEYS, "time", *columns])
    joined = pd.concat(parts, axis=1).reset_index()
    for column in columns:
        if column not in joined:
            joined[column] = np.nan
    return joined[[*KEYS, "time", *columns]]


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


def usage_frame(
    cpu: pd.DataFrame,
    memory: pd.DataFrame,
    resources: pd.DataFrame,
    owners: pd.DataFrame,
    start: int,
    end: int,
    throttled: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Canonical long usage for windows starting in [start, end).

    A row needs cpu; memory must be there too unless the series has no memory
    samples at all (the schema allows CPU-only series, not holes in measured ones).
    A window missing one of the two is left out rather than half filled. Throttling
    (`cpu_windows` of the throttled counter) is optional: NaN where not exported.
    """
    usage = cpu.merge(memory, on=[*KEYS, "time"], how="left")
    measured = memory[KEYS].drop_duplicates().assign(measured=True)
    usage = usage.merge(measured, on=KEYS, how="left")
    usage = usage[usage["memory"].notna() | usage["measured"].isna()]
    usage = usage[(usage["time"] >= start) & (usage["time"] < end)]
    usage = usage.merge(resources, on=[*KEYS, "time"], how="left")
    if throttled is not None and not throttled.empty:
        usage = usage.merge(throttled, on=[*KEYS, "time"], how="left")
    else:
        usage[THROTTLED_COLUMN] = np.nan
    usage = with_workloads(usage, owners)
    usage = usage.sort_values([*KEYS, "time"], kind="stable").reset_index(drop=True)
    usage["timestamp"] = pd.to_datetime(usage["time"].to_numpy(dtype=np.int64), unit="s", utc=True)
    for column in ("namespace", "workload", "pod", "container"):
        usage[column] = usage[column].astype(str)
    for column in ("cpu", "memory", *RESOURCE_COLUMNS, THROTTLED_COLUMN):
        usage[column] = usage[column].astype(np.float64)
    return usage[list(USAGE_COLUMNS)]


def oom_events(
    restarts: pd.DataFrame,
    oom_reason: pd.DataFrame,
    resources: pd.DataFrame,
    memory: pd.DataFrame,
    step: int,
) -> pd.DataFrame:
    """An OOM kill is a restart-count increase seen while the last termination is OOMKilled.

    It is stamped at the first grid point showing it (at most one step after the
    kill) and carries the memory limit then, or, without a limit, the peak
    working set of the window before it. Several kills within one step show as one
    jump of the restart counter and give one event (the counter cannot tell more).
    """
    paired = _next_in_series(restarts, KEYS, step)
    increase = (paired["value_next"] - paired["value"]).round()
    jumps = paired.loc[increase > 0, KEYS].copy()
    jumps["time"] = paired.loc[increase > 0, "time_next"].astype(np.int64)
    killed = oom_reason[oom_reason["value"] == 1][[*KEYS, "time"]]
    jumps = jumps.merge(killed, on=[*KEYS, "time"])
    limits = resources[[*KEYS, "time", "memory_limit"]]
    jumps = jumps.merge(limits, on=[*KEYS, "time"], how="left")
    before = memory.assign(time=memory["time"] + step)
    jumps = jumps.merge(before, on=[*KEYS, "time"], how="left")
    jumps["memory"] = jumps["memory_limit"].fillna(jumps["memory"])
    return _events(jumps, "OOMKilled")


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
        return _events(pd.DataFrame(columns=[*KEYS, "time", "memory"]), "Evicted")
    seen = memory.merge(edges, on=pods)
    since = seen["since"].isna() | (seen["time"] >= seen["since"])
    seen = seen[(seen["time"] < seen["evicted"]) & since]
    seen = seen.assign(whole=seen["time"] + 2 * step <= seen["evicted"])
    last = seen.sort_values(["whole", "time"]).groupby([*KEYS, "evicted"], as_index=False).last()
    last["time"] = last["evicted"]
    return _events(last, "Evicted")


def _events(frame: pd.DataFrame, reason: str) -> pd.DataFrame:
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
