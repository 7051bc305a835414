"""The OpenMetrics history writer, checked line by line (the server tests read it back)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from recommender.data.openmetrics import (
    escape_label_value,
    format_value,
    usage_to_openmetrics,
)
from recommender.data.promql import LabelNames, MetricNames, QueryNames

T0 = 1_700_000_100  # a multiple of 300


def usage(cpu: list[float], memory: list[float], times: list[int] | None = None) -> pd.DataFrame:
    times = times if times is not None else [T0 + 300 * i for i in range(len(cpu))]
    return pd.DataFrame(
        {
            "timestamp": pd.to_datetime(times, unit="s", utc=True),
            "namespace": "ns",
            "pod": "p",
            "container": "c",
            "cpu": cpu,
            "memory": memory,
        }
    )


def samples_of(text: str, metric: str) -> list[tuple[str, str]]:
    """(value, timestamp) of every sample line of `metric`."""
    out = []
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            _, value, stamp = line.rsplit(" ", 2)
            out.append((value, stamp))
    return out


def test_label_values_are_escaped() -> None:
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


@pytest.mark.parametrize("value", [0.1, 1 / 3, 123456789.0, 2.0**60, 1e-12, 0.0, 5e-324])
def test_values_round_trip_exactly(value: float) -> None:
    assert float(format_value(value)) == value
    assert format_value(float("nan")) == "NaN"
    assert format_value(math.inf) == "+Inf"


def test_cpu_counter_integrates_cores_times_period() -> None:
    text = usage_to_openmetrics(usage([0.5, 0.25, 1.0], [10.0, 20.0, 30.0]))
    counter = samples_of(text, "container_cpu_usage_seconds_total")
    assert counter == [
        ("0", str(T0)),
        ("150", str(T0 + 300)),
        ("225", str(T0 + 600)),
        ("525", str(T0 + 900)),
    ]
    memory = samples_of(text, "container_memory_working_set_bytes")
    assert memory == [("10", str(T0)), ("20", str(T0 + 300)), ("30", str(T0 + 600))]


def test_a_gap_restarts_the_counter_from_zero() -> None:
    times = [T0, T0 + 300, T0 + 1200]
    text = usage_to_openmetrics(usage([1.0, 1.0, 2.0], [1.0, 1.0, 1.0], times), step=300)
    counter = samples_of(text, "container_cpu_usage_seconds_total")
    assert counter[-2:] == [("0", str(T0 + 1200)), ("600", str(T0 + 1500))]
    assert counter[2] == ("600", str(T0 + 600))


def test_cadvisor_series_carry_image_and_name_and_extra_labels() -> None:
    text = usage_to_openmetrics(usage([0.5], [1.0]), step=300, extra_labels={"cluster": "prod"})
    line = next(x for x in text.splitlines() if x.startswith("container_memory_working_set"))
    assert line.startswith('container_memory_working_set_bytes{cluster="prod",')
    assert 'namespace="ns",pod="p",container="c"' in line
    assert 'image="registry.local/c:history"' in line
    assert 'name="k8s_c_p_ns_0"' in line
    with pytest.raises(ValueError, match="label name"):
        usage_to_openmetrics(usage([0.5], [1.0]), step=300, extra_labels={"bad-name": "x"})


def test_families_are_whole_typed_and_the_text_ends_with_eof() -> None:
    frame = usage([0.5, 0.5], [1.0, 2.0])
    other = frame.assign(pod='q"\\')
    frame = pd.concat([frame, other], ignore_index=True)
    frame["workload"] = "web"
    frame["cpu_request"] = 0.5
    frame["memory_limit"] = 2.0**30
    text = usage_to_openmetrics(frame)
    assert text.endswith("# EOF\n")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    names = [line.split("{")[0] for line in lines]
    order = list(dict.fromkeys(names))  # first appearance
    assert names == sorted(names, key=order.index), "families must not interleave"
    assert "# TYPE container_cpu_usage_seconds counter" in text
    assert "# TYPE kube_pod_container_status_restarts counter" in text
    assert 'pod="q\\"\\\\"' in text
    assert 'resource="cpu",unit="core"} 0.5' in text
    assert 'resource="memory",unit="byte"} 1073741824 ' in text
    assert "cpu_limit" not in text and "kube_pod_container_resource_limits{" in text
    owner = next(x for x in lines if x.startswith("kube_pod_owner"))
    assert 'owner_kind="ReplicaSet",owner_name="web-' in owner


def test_oom_kill_sets_restarts_and_last_terminated_reason() -> None:
    events = pd.DataFrame(
        {
            "timestamp": pd.to_datetime([T0 + 400], unit="s", utc=True),
            "namespace": ["ns"],
            "pod": ["p"],
            "container": ["c"],
            "reason": ["OOMKilled"],
            "memory": [1.0],
        }
    )
    text = usage_to_openmetrics(usage([0.1] * 4, [1.0] * 4), events)
    restarts = samples_of(text, "kube_pod_container_status_restarts_total")
    assert [value for value, _ in restarts] == ["0", "0", "1", "1"]
    reason = samples_of(text, "kube_pod_container_status_last_terminated_reason")
    assert reason == [("1", str(T0 + 600)), ("1", str(T0 + 900))]
    assert 'reason="OOMKilled"' in text


def test_eviction_sets_the_pod_status_reason_from_the_eviction_on() -> None:
    events = pd.DataFrame(
        {
            "timestamp": pd.to_datetime([T0 + 500], unit="s", utc=True),
            "namespace": ["ns"],
            "pod": ["p"],
            "container": ["c"],
            "reason": ["Evicted"],
            "memory": [1.0],
        }
    )
    text = usage_to_openmetrics(usage([0.1] * 3, [1.0] * 3), events)
    assert samples_of(text, "kube_pod_status_reason") == [
        ("1", str(T0 + 500)),
        ("1", str(T0 + 600)),
    ]


def test_empty_usage_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        usage_to_openmetrics(usage([], []))


def test_nan_memory_writes_no_gauge_sample() -> None:
    text = usage_to_openmetrics(usage([0.5, 0.5], [np.nan, 3.0]))
    assert samples_of(text, "container_memory_working_set_bytes") == [("3", str(T0 + 300))]


def test_a_relabelled_cluster_is_written_under_its_own_names() -> None:
    """cAdvisor's and kube-state-metrics' series each carry the label names they were given."""
    names = QueryNames(
        metrics=MetricNames(memory_working_set="container_memory_rss", cpu_usage="cpu_seconds"),
        labels=LabelNames(pod="pod_name", container="name"),
        state_labels=LabelNames(namespace="exported_namespace"),
    )
    text = usage_to_openmetrics(usage([0.5], [1.0]), step=300, names=names)
    memory = next(x for x in text.splitlines() if x.startswith("container_memory_rss{"))
    assert 'pod_name="p"' in memory and 'name="c"' in memory  # the id wins over cAdvisor's name
    assert "# TYPE cpu_seconds unknown" in text  # a counter without _total is written untyped
    assert samples_of(text, "cpu_seconds") == [("0", str(T0)), ("150", str(T0 + 300))]
    restarts = next(x for x in text.splitlines() if x.startswith("kube_pod_container_status_"))
    assert '{exported_namespace="ns",pod="p",container="c"}' in restarts
    assert "container_memory_working_set_bytes" not in text
