"""OOM kills matched to series: one rule for both models and the CLI's note."""

from __future__ import annotations

import pandas as pd

from recommender.data.ooms import history_start, oom_kills, unmatched_oom_kills
from recommender.data.schema import validate_events, validate_usage


def _usage() -> pd.DataFrame:
    times = pd.date_range("2024-03-01", periods=3, freq="5min", tz="UTC")
    return validate_usage(
        pd.DataFrame(
            {
                "timestamp": [*times, *times],
                "namespace": "shop",
                "workload": "web",
                "pod": ["web-1"] * 3 + ["web-2"] * 3,
                "container": "app",
                "cpu": 0.5,
                "memory": 1e8,
            }
        )
    )


def _events(namespaces: list[str], reasons: list[str] | None = None) -> pd.DataFrame:
    n = len(namespaces)
    return validate_events(
        pd.DataFrame(
            {
                "timestamp": pd.date_range("2024-03-01T00:20", periods=n, freq="-1min", tz="UTC"),
                "namespace": namespaces,
                "pod": ["web-2", "web-1", "web-1", "web-2"][:n],
                "container": "app",
                "reason": reasons or ["OOMKilled"] * n,
                "memory": [2e8, 3e8, 4e8, 5e8][:n],
            }
        )
    )


def test_kills_match_on_namespace_pod_and_container_in_time_order() -> None:
    keys = pd.DataFrame({"namespace": ["shop"] * 2, "pod": ["web-1", "web-2"], "container": "app"})
    kills = oom_kills(_events(["shop", "shop", "shpo"]), keys)
    assert kills.series.tolist() == [0, 1]  # 00:19 web-1, then 00:20 web-2
    assert kills.memory.tolist() == [3e8, 2e8]
    assert kills.unmatched == 1


def test_a_namespace_typo_leaves_every_kill_unmatched() -> None:
    assert unmatched_oom_kills(_usage(), _events(["shpo", "shpo"])) == 2
    assert unmatched_oom_kills(_usage(), _events(["shop", "shop"])) == 0
    # evictions are not kills; no events at all match nothing either
    assert unmatched_oom_kills(_usage(), _events(["shpo"], ["Evicted"])) == 0
    assert unmatched_oom_kills(_usage(), None) == 0


def test_history_start_is_the_first_sample_or_the_remembered_days() -> None:
    assert history_start(1_000, 900_000) == 1_000  # the VPA model: all it was given
    # the forecaster: what follows last - days, even before the first sample
    assert history_start(500_000, 900_000, days=5.0) == 900_000 - 5 * 86_400 + 1
    assert history_start(1_000, 900_000, days=0.5) == 900_000 - 43_200 + 1


def test_kills_before_since_are_left_out_but_not_counted_as_unmatched() -> None:
    keys = pd.DataFrame({"namespace": ["shop"] * 2, "pod": ["web-1", "web-2"], "container": "app"})
    events = _events(["shop", "shop", "shop", "shpo"])  # 00:20 web-2 ... 00:17 web-2 (typo)
    since = int(pd.Timestamp("2024-03-01T00:19", tz="UTC").timestamp())
    kills = oom_kills(events, keys, since)
    assert kills.series.tolist() == [0, 1]  # 00:19 web-1 (at since: kept), 00:20 web-2
    assert kills.unmatched == 1
    assert len(oom_kills(events, keys)) == 3
