"""The library entry point: aggregation across pods, the pod minimum, OOM ordering."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data.schema import validate_usage
from recommender.recommend import recommend_vpa

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
