"""The published schedule starts from the requests in force and the changes already made."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
import pytest

from recommender.data.synthetic import demo_fleet
from recommender.forecast.policy import ForecastPolicy, InForce, Needs
from recommender.forecast.settings import ForecastSettings
from recommender.in_force import OnRecord, requests_in_force
from recommender.recommend import recommend_forecast_workloads
from tailor.change_budget import ChangeBudget

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


NEXT_BLOCK = pd.Timestamp("2024-01-02 12:00", tz="UTC").timestamp()
UNKNOWN = np.full(1, np.nan)


def _played(
    record: OnRecord,
    cpu: list[float],
    memory: float = 2.0**31,
    settings: ForecastSettings | None = None,
    usage: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One aggregate's schedule of the hourly `cpu` need from 12:00 of the second day,
    played from what `record` holds: the block in force first. With `usage` (the lowest
    and highest CPU of the last windows), the history ended 16 minutes into that block,
    else it ended at 12:00."""
    settings = settings or ForecastSettings()
    horizon = np.asarray(cpu, dtype=np.float64)[None, :]
    low, high = usage if usage is not None else (np.nan, np.nan)
    first = NEXT_BLOCK + (3600 if usage is not None else 0)
    needs = Needs(
        cpu=horizon,
        memory=np.full(horizon.shape, memory),
        scale=np.ones(1),
        usage=np.full(1, high),
        recent_low=np.full(1, low),
        recent_high=np.full(1, high),
        hold_until=np.full(1, -np.inf),
        cpu_peak=UNKNOWN,
        memory_peak=UNKNOWN,
        block_start=first - 3600,
        history_end=first - (3600 - 16 * 60 if usage is not None else 0),
        first_start=first,
        period=3600,
    )
    cpu_now = record.cpu if len(record.keys) else UNKNOWN
    memory_now = record.memory if len(record.keys) else UNKNOWN
    budget = ChangeBudget.after(record.changes or [np.empty(0)], settings.max_changes_per_day)
    return ForecastPolicy(settings).schedule(needs, InForce(cpu_now, memory_now, budget))


def test_a_spent_budget_holds_the_request_in_force_but_never_under_the_need() -> None:
    settings = ForecastSettings().with_budget(6)
    # six changes between 14:00 and 19:00 of the first day, the history ending at 12:00
    # of the second: nothing may change before the first of them leaves the day
    requests = [1.0] * 14 + [1.2, 1.0] * 3 + [1.0] * 16
    in_force = requests_in_force(_history(requests))
    assert len(in_force.changes[0]) == 6 and in_force.cpu[0] == 1.0
    need = [0.6] * 12 + [1.5] * 3 + [0.6] * 9  # a cut wanted now, a peak later
    cpu = _played(in_force, need, settings=settings)[0][0, 1:]
    assert (cpu[:2] == 1.0).all()  # the cut waits for the budget
    assert cpu[2:12].min() < 1.0  # ... and is made once changes leave the day
    assert (cpu >= np.asarray(need) - 1e-9).all()  # the peak is covered
    changes = np.count_nonzero(np.diff(np.concatenate([[1.0], cpu])))
    assert changes <= 6


def test_without_requests_on_record_the_schedule_starts_where_the_need_is() -> None:
    need = [0.6] * 24
    unknown = requests_in_force(_history([np.nan] * 3))
    np.testing.assert_allclose(_played(unknown, need)[0][0, 1:], need)


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
        _, schedule = recommend_forecast_workloads(
            usage[usage["timestamp"] <= cut], events, ForecastSettings().with_budget(6)
        )
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
    cpu, memory = _played(in_force, [0.6] * 24, memory=np.nan)
    assert np.isnan(memory).all() and not np.isnan(cpu).any()


def test_the_block_in_force_keeps_the_requests_in_force_until_the_boundary() -> None:
    in_force = requests_in_force(_history([1.0] * 30))
    cpu = _played(in_force, [0.4] * 24, usage=(0.3, 0.35))[0][0]
    assert cpu[0] == 1.0  # no cut between boundaries: the strategy cuts at a boundary
    assert cpu[1] < 1.0  # ... the next one


def test_the_block_in_force_reacts_to_usage_clearly_over_the_request() -> None:
    settings = ForecastSettings()
    in_force = requests_in_force(_history([1.0] * 30))
    short = _played(in_force, [1.0] * 24, settings=settings, usage=(1.3, 1.5))[0]
    assert short[0, 0] == pytest.approx(1.5 * (1.0 + settings.reactions.react_margin))
    # one window under the request in the last `react_after_windows`: no reaction yet
    once = _played(in_force, [1.0] * 24, settings=settings, usage=(0.9, 1.5))[0]
    assert once[0, 0] == 1.0


def test_with_nothing_in_force_the_block_in_force_sets_what_the_boundary_would() -> None:
    unknown = requests_in_force(_history([np.nan] * 3))
    need = [0.9, 0.7] + [0.6] * 22
    cpu = _played(unknown, need, usage=(0.5, 0.6))[0]
    assert cpu[0, 0] == pytest.approx(0.9)  # covers the next blocks
