"""The published schedule starts from the requests in force and the changes already made."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
import pytest

from recommender.data.synthetic import demo_fleet
from recommender.forecast.in_force import held_to_budget, requests_in_force
from recommender.forecast.settings import ForecastSettings
from recommender.recommend import recommend_forecast_workloads

KEYS = ["namespace", "workload", "container"]
HOUR = pd.Timedelta(hours=1)


def _history(requests: list[float], pods: int = 1) -> pd.DataFrame:
    times = pd.date_range("2024-01-01", periods=len(requests), freq="1h", tz="UTC")
    frames = [
        pd.DataFrame(
            {
                "timestamp": times,
                "namespace": "shop",
                "workload": "web",
                "pod": f"web-{pod}",
                "container": "app",
                "cpu": 0.5,
                "memory": 2.0**30,
                "cpu_request": np.asarray(requests) * (1.0 if pod == 0 else 0.5),
                "memory_request": 2.0**31,
            }
        )
        for pod in range(pods)
    ]
    return pd.concat(frames, ignore_index=True)


def test_the_requests_in_force_and_the_last_days_changes_are_read_from_the_history() -> None:
    requests = [1.0] * 20 + [2.0] * 10 + [1.5] * 5 + [np.nan] * 3  # the last samples unknown
    in_force = requests_in_force(_history(requests, pods=2))
    assert in_force.keys == [("shop", "web", "app")]
    assert in_force.cpu[0] == 1.5  # the largest pod's, last known
    assert in_force.memory[0] == 2.0**31
    end = pd.Timestamp("2024-01-01", tz="UTC") + 37 * HOUR
    hours_before_end = (end.timestamp() - in_force.changes[0]) / 3600
    np.testing.assert_allclose(hours_before_end, [17.0, 7.0])  # 20 h and 30 h into the history


def test_a_changed_request_older_than_a_day_is_not_counted() -> None:
    in_force = requests_in_force(_history([1.0] * 2 + [2.0] * 40))
    assert in_force.changes[0].size == 0 and in_force.cpu[0] == 2.0


def test_no_request_on_record_means_nothing_in_force() -> None:
    history = _history([1.0] * 5).drop(columns=["cpu_request", "memory_request"])
    assert requests_in_force(history).keys == []
    memory_only = requests_in_force(_history([np.nan] * 5))  # no CPU request on record
    assert np.isnan(memory_only.cpu[0]) and memory_only.memory[0] == 2.0**31


def _schedule(cpu: list[float], memory: float = 2.0**31) -> pd.DataFrame:
    start = pd.date_range("2024-01-02 12:00", periods=len(cpu), freq="1h", tz="UTC")
    return pd.DataFrame(
        {
            "namespace": "shop",
            "workload": "web",
            "container": "app",
            "start": start,
            "end": start + HOUR,
            "cpu_request": cpu,
            "memory_request": memory,
            "memory_limit": memory,
        }
    )


def test_a_spent_budget_holds_the_request_in_force_but_never_under_the_need() -> None:
    settings = ForecastSettings()
    # six changes between 14:00 and 19:00 of the first day, the history ending at 12:00
    # of the second: nothing may change before the first of them leaves the day
    requests = [1.0] * 14 + [1.2, 1.0] * 3 + [1.0] * 16
    in_force = requests_in_force(_history(requests))
    assert len(in_force.changes[0]) == 6 and in_force.cpu[0] == 1.0
    need = [0.6] * 12 + [1.5] * 3 + [0.6] * 9  # a cut wanted now, a peak later
    played = held_to_budget(_schedule(need), in_force, settings)
    cpu = played["cpu_request"].to_numpy()
    assert (cpu[:2] == 1.0).all()  # the cut waits for the budget
    assert cpu[2:12].min() < 1.0  # ... and is made once changes leave the day
    assert (cpu >= np.asarray(need) - 1e-9).all()  # the peak is covered
    changes = np.count_nonzero(np.diff(np.concatenate([[1.0], cpu])))
    assert changes <= 6


def test_without_requests_on_record_the_schedule_starts_where_the_need_is() -> None:
    need = [0.6] * 24
    unknown = requests_in_force(_history([np.nan] * 3))
    played = held_to_budget(_schedule(need), unknown, ForecastSettings())
    np.testing.assert_allclose(played["cpu_request"], need)


def test_hourly_replans_that_are_followed_change_requests_at_most_6_times_a_day() -> None:
    """The live loop: re-plan every hour on the history so far, apply the hour's requests
    (the in-place updater), and let the next history carry them. Before the requests in
    force were read, every aggregate of the demo fleet changed at nearly every re-plan."""
    usage, events = demo_fleet(days=8)
    usage = usage.copy()
    end = usage["timestamp"].max()
    applied: dict[Hashable, list[tuple[float, float]]] = {}
    hours = 30
    for hour in range(hours):
        cut = end - (hours - hour) * HOUR
        _, schedule = recommend_forecast_workloads(usage[usage["timestamp"] <= cut], events)
        coming_at = cut + HOUR  # the next sample: the follower applies the period then
        due = schedule[(schedule["start"] <= coming_at) & (coming_at < schedule["end"])]
        for key, row in due.set_index(KEYS).iterrows():
            applied.setdefault(key, []).append((row["cpu_request"], row["memory_request"]))
            coming = (usage["timestamp"] > cut) & (usage["timestamp"] <= cut + HOUR)
            rows = coming & (usage[KEYS] == pd.Series(key, index=KEYS)).all(axis=1)
            usage.loc[rows, "cpu_request"] = row["cpu_request"]
            usage.loc[rows, "memory_request"] = row["memory_request"]
    for key, values in applied.items():
        moved = ~np.all(np.isclose(np.diff(np.asarray(values), axis=0), 0.0), axis=1)
        # the first re-plan's own move away from the spec counts as the first change
        assert moved.sum() + 1 <= 6 + 2, (key, moved.sum())
        for start in range(len(moved) - 24 + 1):
            assert moved[start : start + 24].sum() <= 6, key


def test_what_was_not_measured_stays_unplanned_whatever_is_in_force() -> None:
    in_force = requests_in_force(_history([1.0] * 30))  # 2 GiB of memory asked for
    played = held_to_budget(_schedule([0.6] * 24, memory=np.nan), in_force, ForecastSettings())
    assert played["memory_request"].isna().all() and played["memory_limit"].isna().all()
    assert played["cpu_request"].notna().all()


def _mid_block(cpu: list[float], low: float, high: float) -> pd.DataFrame:
    """A schedule whose first block is the one in force (the history ended in it), with
    the lowest and highest CPU usage of the last windows."""
    frame = _schedule(cpu)
    frame["cpu_recent_low"], frame["cpu_recent_high"] = low, high
    frame["cpu_scale"], frame["cpu_usage"] = 1.0, high
    frame["history_end"] = np.nan
    first_start = pd.Timestamp(frame["start"].iloc[0])
    frame.loc[0, "history_end"] = (first_start + pd.Timedelta(minutes=16)).timestamp()
    return frame


def test_the_block_in_force_keeps_the_requests_in_force_until_the_boundary() -> None:
    in_force = requests_in_force(_history([1.0] * 30))
    played = held_to_budget(
        _mid_block([0.4] * 25, low=0.3, high=0.35), in_force, ForecastSettings()
    )
    cpu = played["cpu_request"].to_numpy()
    assert cpu[0] == 1.0  # no cut between boundaries: the strategy cuts at a boundary
    assert cpu[1] < 1.0  # ... the next one
    assert "history_end" not in played.columns  # the rules are not published


def test_the_block_in_force_reacts_to_usage_clearly_over_the_request() -> None:
    settings = ForecastSettings()
    in_force = requests_in_force(_history([1.0] * 30))
    short = held_to_budget(_mid_block([1.0] * 25, low=1.3, high=1.5), in_force, settings)
    assert short["cpu_request"].iloc[0] == pytest.approx(1.5 * (1.0 + settings.react_margin))
    # one window under the request in the last `react_after_windows`: no reaction yet
    once = held_to_budget(_mid_block([1.0] * 25, low=0.9, high=1.5), in_force, settings)
    assert once["cpu_request"].iloc[0] == 1.0


def test_with_nothing_in_force_the_block_in_force_sets_what_the_boundary_would() -> None:
    unknown = requests_in_force(_history([np.nan] * 3))
    need = [0.6, 0.9, 0.7] + [0.6] * 22
    played = held_to_budget(_mid_block(need, low=0.5, high=0.6), unknown, ForecastSettings())
    assert played["cpu_request"].iloc[0] == pytest.approx(0.9)  # covers the next blocks
