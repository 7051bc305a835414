"""Turning raw query results into canonical frames, on hand-made samples (no server)."""

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


def unbroken(counter: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`resets` and `lows` of a counter that only ever grew: none, and its own value."""
    return counter.assign(value=0.0), counter


def test_cpu_divides_by_the_true_interval_between_samples() -> None:
    counter = samples([0, 300, 600], [10.0, 70.0, 100.0])
    stamps = samples([0, 300, 600], [-15.0, 285.0, 600.0])  # scrapes not on the grid
    cpu = frames.cpu_windows(counter, stamps, STEP, *unbroken(counter))
    assert cpu["time"].tolist() == [0, 300]
    assert cpu["cpu"].tolist() == [60.0 / 300.0, 30.0 / 315.0]


def test_cpu_skips_resets_stale_samples_and_missing_grid_points() -> None:
    counter = samples([0, 300, 600, 900, 1500, 1800], [50.0, 5.0, 5.0, 8.0, 9.0, 12.0])
    stamps = samples([0, 300, 600, 900, 1500, 1800], [0.0, 300.0, 300.0, 900.0, 1500.0, 1800.0])
    cpu = frames.cpu_windows(counter, stamps, STEP, *unbroken(counter))
    # 0: reset; 300: same sample seen twice (lookback); 900: no point at 1200.
    assert cpu["time"].tolist() == [600, 1500]
    # 600 is averaged over the true interval, from the sample at 300 to the one at 900.
    assert cpu["cpu"].tolist() == [3.0 / 600.0, 3.0 / 300.0]


def test_cpu_skips_a_reset_the_new_counter_overtook() -> None:
    """A restart whose new counter passed the old value before the window's end."""
    times = [0, 300, 600, 900]
    counter = samples(times, [10.0, 40.0, 70.0, 100.0])
    stamps = samples(times, [0.0, 300.0, 600.0, 900.0])
    resets = samples(times, [0.0, 1.0, 0.0, 0.0])  # a reset inside [0, 300]
    lows = samples(times, [10.0, 1.0, 45.0, 2.0])  # [600, 900]: reset before its first sample
    cpu = frames.cpu_windows(counter, stamps, STEP, resets, lows)
    assert cpu["time"].tolist() == [300]
    assert cpu["cpu"].tolist() == [30.0 / 300.0]


def test_memory_value_at_t_belongs_to_the_window_before() -> None:
    memory = frames.memory_windows(samples([300, 600], [7.0, 9.0]), STEP)
    assert memory["time"].tolist() == [0, 300]
    assert memory["memory"].tolist() == [7.0, 9.0]


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


def _resources(times: list[int], memory_limit: float) -> pd.DataFrame:
    frame = pd.DataFrame({**{k: [v] * len(times) for k, v in KEY.items()}, "time": times})
    for column in ("cpu_request", "memory_request", "cpu_limit"):
        frame[column] = np.nan
    frame["memory_limit"] = memory_limit
    return frame


def test_oom_needs_a_restart_and_the_oomkilled_reason() -> None:
    restarts = samples([0, 300, 600, 900], [0.0, 1.0, 1.0, 2.0])
    reason = samples([600, 900], [1.0, 1.0])  # the first restart was not an OOM kill
    memory = frames.memory_windows(samples([300, 600, 900], [5.0, 6.0, 7.0]), STEP)
    with_limit = frames.oom_events(restarts, reason, _resources([900], 64.0), memory, STEP)
    assert with_limit["timestamp"].tolist() == [pd.Timestamp(900, unit="s", tz="UTC")]
    assert with_limit["memory"].tolist() == [64.0]
    without_limit = frames.oom_events(restarts, reason, _resources([], np.nan), memory, STEP)
    assert without_limit["memory"].tolist() == [7.0]  # peak of the window [600, 900)


def test_usage_drops_half_measured_windows_but_keeps_cpu_only_series() -> None:
    cpu = pd.concat(
        [
            samples([0, 300], [0.5, 0.6]).rename(columns={"value": "cpu"}),
            samples([0], [0.7], container="cpu-only").rename(columns={"value": "cpu"}),
        ]
    )
    memory = samples([0], [100.0]).rename(columns={"value": "memory"})
    owners = frames.samples_frame(["namespace", "pod", "owner_kind", "owner_name"])
    resources = frames.resource_columns(frames.samples_frame([]), frames.samples_frame([]))
    usage = frames.usage_frame(cpu, memory, resources, owners, start=0, end=600)
    assert usage[["container", "cpu"]].values.tolist() == [["c", 0.5], ["cpu-only", 0.7]]
    assert usage["memory"].tolist()[0] == 100.0
    assert np.isnan(usage["memory"].tolist()[1])
    assert usage["workload"].tolist() == ["p", "p"]


def test_eviction_is_reported_once_per_container_with_its_last_whole_window() -> None:
    evicted = samples([600, 900], [1.0, 1.0]).drop(columns="container")
    memory = pd.concat(
        [
            frames.memory_windows(samples([300, 600, 900], [5.0, 6.0, 8.0]), STEP),
            frames.memory_windows(samples([300], [3.0], container="side"), STEP),
        ]
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
    peaks = samples(list(range(300, 3301, 300)), [float(t) for t in range(300, 3301, 300)])
    events = frames.eviction_events(evicted, frames.memory_windows(peaks, STEP), 0, STEP)
    assert events["timestamp"].tolist() == [
        pd.Timestamp(t, unit="s", tz="UTC") for t in (300, 2400)
    ]
    # window [1800, 2100): the last wholly before the second eviction; the first has
    # no window wholly before it and takes the one holding it, [0, 300)
    assert events["memory"].tolist() == [300.0, 2100.0]


def test_requests_and_limits_no_container_can_have_are_unknown_not_fatal() -> None:
    requests = pd.concat(
        [
            samples([0, 300], [0.5, np.inf], resource="cpu"),
            samples([0, 300], [1e300, 2.0**20], resource="memory"),
        ]
    )
    limits = samples([0, 300], [-1.0, 2.0], resource="cpu")
    wide = frames.resource_columns(requests, limits).set_index("time")
    assert wide["cpu_request"].tolist()[0] == 0.5 and np.isnan(wide["cpu_request"][300])
    assert np.isnan(wide["memory_request"][0]) and wide["memory_request"][300] == 2.0**20
    assert np.isnan(wide["cpu_limit"][0]) and wide["cpu_limit"][300] == 2.0
