"""The library entry point: aggregation across pods, the pod minimum, OOM ordering."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from recommender.data.schema import DataFormatError, validate_usage
from recommender.recommend import recommend_forecast_workloads, recommend_vpa

MIB = 2**20


def _usage(pods: dict[str, tuple[float, float]], hours: int = 48) -> pd.DataFrame:
    rows = []
    start = pd.Timestamp("2024-03-01", tz="UTC")
    for pod, (cpu, memory) in pods.items():
        for minute in range(0, hours * 60, 5):
            rows.append(
                {
                    "timestamp": start + pd.Timedelta(minutes=minute),
                    "namespace": "ns",
                    "workload": "web",
                    "pod": pod,
                    "container": "app",
                    "cpu": cpu,
                    "memory": memory,
                }
            )
    return validate_usage(pd.DataFrame(rows))


def test_pods_of_a_workload_merge_into_one_recommendation() -> None:
    frame = recommend_vpa(_usage({"web-1": (0.2, 300 * MIB), "web-2": (1.0, 300 * MIB)}))
    assert len(frame) == 1
    # Half the samples at 0.2 cores, half at 1.0: P90 lies in 1.0's bucket, P50 in 0.2's.
    row = frame.iloc[0]
    assert 1.0 * 1.15 <= row.cpu_target <= 1.0 * 1.05 * 1.15 + 0.001
    assert row.cpu_lower < 0.3


def test_oom_counts_only_when_fed_in_time_order() -> None:
    usage = _usage({"web-1": (0.1, 300 * MIB)}, hours=72)
    early = pd.DataFrame(
        {
            "timestamp": [pd.Timestamp("2024-03-01T02:00", tz="UTC")],
            "namespace": ["ns"],
            "pod": ["web-1"],
            "container": ["app"],
            "reason": ["OOMKilled"],
            "memory": [800.0 * MIB],
        }
    )
    with_oom = recommend_vpa(usage, early).iloc[0]
    without = recommend_vpa(usage).iloc[0]
    # The OOM bump max(800 MiB + 100 MiB, 1.2 * 800 MiB) = 960 MiB lands in day one's
    # interval, so it raises the upper bound's peak histogram (P95 of 3 peaks).
    assert with_oom.memory_upper > without.memory_upper
    assert with_oom.memory_upper >= 960 * MIB * 1.15
    assert np.isclose(with_oom.cpu_target, without.cpu_target)


ENTRY_POINTS: list[Callable[..., object]] = [recommend_vpa, recommend_forecast_workloads]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: f.drop(columns=["cpu"]), "missing required column"),
        (lambda f: f.assign(cpu=-1.0), "negative value"),
        (lambda f: f.assign(cpu="x"), "not a number"),
        (lambda f: f.iloc[::-1], "unsorted"),
        (lambda f: f.iloc[:0], "no data rows"),
    ],
)
def test_a_notebook_frame_is_checked_like_a_file(
    entry: Callable[..., object], damage: Callable[[pd.DataFrame], pd.DataFrame], message: str
) -> None:
    """A frame built in Jupyter has not been through a file reader: the same checks apply."""
    with pytest.raises(DataFormatError, match=message):
        entry(damage(_usage({"web-1": (0.5, 200 * MIB)})))


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_naive_times_and_a_missing_workload_are_read_as_the_file_format_says(
    entry: Callable[..., object],
) -> None:
    usage = _usage({"web-1": (0.5, 200 * MIB)})
    loose = usage.drop(columns=["workload"]).assign(
        timestamp=usage["timestamp"].dt.tz_localize(None)
    )
    strict = entry(usage)
    relaxed = entry(loose)
    strict_frame = strict[0] if isinstance(strict, tuple) else strict
    relaxed_frame = relaxed[0] if isinstance(relaxed, tuple) else relaxed
    assert isinstance(strict_frame, pd.DataFrame) and isinstance(relaxed_frame, pd.DataFrame)
    # the workload defaults to the pod's name; the numbers are the same
    assert list(relaxed_frame["workload"]) == ["web-1"]
    assert relaxed_frame["cpu_target"].tolist() == strict_frame["cpu_target"].tolist()
