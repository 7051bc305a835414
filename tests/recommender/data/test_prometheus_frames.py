"""Pods' workloads and eviction events from hand-made samples (no server)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from recommender.data import prometheus_frames as frames

STEP = 300
KEY = {"namespace": "ns", "pod": "p", "container": "c"}


def samples(times: list[int], values: list[float], **labels: str) -> pd.DataFrame:
    columns = {**KEY, **labels}
    frame = pd.DataFrame({name: [value] * len(times) for name, value in columns.items()})
    frame["time"] = np.array(times, dtype=np.int64)
    frame["value"] = np.array(values, dtype=np.float64)
    return frame


def test_pods_without_owner_fall_back_to_the_pod_name() -> None:
    owners = pd.DataFrame(
        {
            "namespace": ["ns", "ns"],
            "pod": ["p", "q"],
            "owner_kind": ["ReplicaSet", "<none>"],
            "owner_name": ["web-5d8f7c9b6d", "<none>"],
            "time": [0, 0],
            "value": [1.0, 1.0],
        }
    )
    usage = pd.DataFrame({"namespace": ["ns", "ns"], "pod": ["p", "q"]})
    named = frames.with_workloads(usage, owners)
    assert named["workload"].tolist() == ["web", "q"]


def test_the_controller_owner_names_the_workload_before_other_owners() -> None:
    """As `tailor.workloads.pod_workload`: the controller, else the first owner by name."""
    owners = pd.DataFrame(
        {
            "namespace": ["ns"] * 4,
            "pod": ["p", "p", "q", "q"],
            "owner_kind": ["Application", "ReplicaSet", "Application", "Service"],
            "owner_name": ["billing", "web-5d8f7c9b6d", "billing", "api"],
            "owner_is_controller": ["false", "true", "false", "false"],
            "time": [0] * 4,
            "value": [1.0] * 4,
        }
    )
    usage = pd.DataFrame({"namespace": ["ns", "ns"], "pod": ["p", "q"]})
    assert frames.with_workloads(usage, owners)["workload"].tolist() == ["web", "billing"]


def test_no_pod_with_an_owner_still_names_every_workload() -> None:
    """Bare pods only (a kubelet simulator's): the merged column is all NaN."""
    owners = pd.DataFrame(
        {
            "namespace": ["ns"],
            "pod": ["q"],
            "owner_kind": ["<none>"],
            "owner_name": ["<none>"],
            "time": [0],
            "value": [1.0],
        }
    )
    usage = pd.DataFrame({"namespace": ["ns", "ns"], "pod": ["p", "q"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas 3 deprecates filling floats with strings
        named = frames.with_workloads(usage, owners)
    assert named["workload"].tolist() == ["p", "q"]


def peaks(times: list[int], values: list[float], **labels: str) -> pd.DataFrame:
    """Memory peaks read at grid points `times`: each of the window before it."""
    frame = samples(times, values, **labels).rename(columns={"value": "memory"})
    return frame.assign(time=frame["time"] - STEP)


def test_eviction_is_reported_once_per_container_with_its_last_whole_window() -> None:
    evicted = samples([600, 900], [1.0, 1.0]).drop(columns="container")
    memory = pd.concat(
        [peaks([300, 600, 900], [5.0, 6.0, 8.0]), peaks([300], [3.0], container="side")]
    )
    events = frames.eviction_events(evicted, memory, start=0, step=STEP)
    # [300, 600) holds the eviction (shown at 600): [0, 300) is the last window before it
    assert events[["container", "memory"]].values.tolist() == [["c", 5.0], ["side", 3.0]]
    assert set(events["timestamp"]) == {pd.Timestamp(600, unit="s", tz="UTC")}
    assert frames.eviction_events(evicted, memory, start=600, step=STEP).empty


def test_every_rising_edge_of_the_evicted_reason_is_an_eviction() -> None:
    """A pod name evicted, recreated (0 again) and evicted again: two events; a gap in
    the series of a pod that stays evicted is not a second one."""
    times = [0, 300, 600, 900, 1500, 1800, 2100, 2400, 3000, 3300]
    values = [0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0]  # no point at 1200, 2700
    evicted = samples(times, values).drop(columns="container")
    memory = peaks(list(range(300, 3301, 300)), [float(t) for t in range(300, 3301, 300)])
    events = frames.eviction_events(evicted, memory, 0, STEP)
    assert events["timestamp"].tolist() == [
        pd.Timestamp(t, unit="s", tz="UTC") for t in (300, 2400)
    ]
    # window [1800, 2100): the last wholly before the second eviction; the first has
    # no window wholly before it and takes the one holding it, [0, 300)
    assert events["memory"].tolist() == [300.0, 2100.0]
