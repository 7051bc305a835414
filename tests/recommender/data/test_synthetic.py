"""The demo fleet: deterministic, valid, and each workload shows the shape it stands for."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.data.arrays import from_long
from recommender.data.schema import validate_events, validate_usage
from recommender.data.synthetic import DEMO_START, demo_fleet


@pytest.fixture(scope="module")
def fleet() -> tuple[pd.DataFrame, pd.DataFrame]:
    return demo_fleet()


def container(
    usage: pd.DataFrame, workload: str, name: str, pod: str | None = None
) -> pd.DataFrame:
    rows = usage[(usage["workload"] == workload) & (usage["container"] == name)]
    if pod is not None:
        rows = rows[rows["pod"] == pod]
    return rows.reset_index(drop=True)


def hour(rows: pd.DataFrame) -> pd.Series:
    return rows["timestamp"].dt.hour


def test_same_seed_same_fleet_other_seed_other_fleet(
    fleet: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    usage, events = demo_fleet()
    pd.testing.assert_frame_equal(usage, fleet[0], check_exact=True)
    pd.testing.assert_frame_equal(events, fleet[1], check_exact=True)
    other, _ = demo_fleet(seed=1)
    assert not np.allclose(other["cpu"], usage["cpu"])


def test_fleet_is_small_valid_and_fully_specified(fleet: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    usage, events = fleet
    pd.testing.assert_frame_equal(validate_usage(usage), usage)
    pd.testing.assert_frame_equal(validate_events(events), events)
    series = usage.groupby(["workload", "pod", "container"]).size()
    assert len(series) == 9 and (series == 8 * 288).all()
    assert set(usage["namespace"]) == {"demo"}
    assert set(usage["workload"]) == {
        "web",
        "reports",
        "nightly-batch",
        "ledger",
        "notifier",
        "inventory",
    }
    assert usage["timestamp"].min() == DEMO_START
    assert usage[["cpu_request", "memory_request", "memory_limit"]].notna().all().all()
    assert usage["cpu_limit"].isna().any() and usage["cpu_limit"].notna().any()  # some unset
    assert (usage["memory"] <= usage["memory_limit"]).all()
    capped = usage["cpu_limit"].notna()
    assert (usage.loc[capped, "cpu"] <= usage.loc[capped, "cpu_limit"]).all()
    arrays = from_long(usage)
    assert (arrays.n_series, arrays.step) == (9, 300)
    assert not np.isnan(arrays.cpu).any() and not np.isnan(arrays.memory).any()


def test_web_service_has_two_pods_with_a_sidecar_and_a_daily_cycle(
    fleet: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    usage, _ = fleet
    web = usage[usage["workload"] == "web"]
    assert web["pod"].nunique() == 2
    assert set(web["container"]) == {"app", "envoy"}
    app = container(usage, "web", "app")
    by_hour = app.groupby(hour(app))["cpu"].mean()
    assert by_hour.idxmax() in range(13, 18) and by_hour.idxmin() in range(1, 6)
    assert by_hour.max() > 3 * by_hour.min()
    sidecar = container(usage, "web", "envoy")
    assert sidecar["cpu"].mean() < 0.2 * app["cpu"].mean()


def test_reports_follow_the_working_week(fleet: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    reports = container(fleet[0], "reports", "app")
    weekend = reports["timestamp"].dt.day_of_week >= 5
    assert weekend.any()
    assert reports.loc[~weekend, "cpu"].mean() > 2.5 * reports.loc[weekend, "cpu"].mean()


def test_batch_runs_at_night_only(fleet: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    batch = container(fleet[0], "nightly-batch", "worker")
    running = hour(batch).isin([1, 2])
    assert batch.loc[running, "cpu"].min() > 10 * batch.loc[~running, "cpu"].max()
    assert batch.loc[running, "memory"].max() > 5 * batch.loc[~running, "memory"].median()


def test_leak_grows_until_oom_killed_at_its_limit(fleet: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    usage, events = fleet
    leak = container(usage, "ledger", "app")
    limit = leak["memory_limit"].iloc[0]
    assert len(events) >= 2
    assert set(events["reason"]) == {"OOMKilled"}
    assert (events["memory"] == limit).all()
    assert (
        (events[["workload", "pod", "container"]] == ["ledger", leak["pod"].iloc[0], "app"])
        .all()
        .all()
    )
    windows = ((events["timestamp"] - DEMO_START).dt.total_seconds() // 300).astype(int)
    for window in windows:
        assert leak["memory"].iloc[window] == limit  # the kill is the window's peak
        assert leak["memory"].iloc[window + 1] < 0.4 * limit  # restarted from baseline
    first_cycle = leak["memory"].iloc[: windows.iloc[0]]
    hours = np.arange(len(first_cycle)) / 12
    slope = np.polyfit(hours, first_cycle / 2**20, 1)[0]
    assert 10 < slope < 16  # MiB per hour
    assert np.corrcoef(hours, first_cycle)[0, 1] > 0.99


def test_notifier_is_bursty(fleet: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    cpu = container(fleet[0], "notifier", "app")["cpu"]
    assert cpu.quantile(0.99) > 10 * cpu.median()
    assert (cpu > 0.5).mean() < 0.15


def test_jvm_heap_is_flat_after_warm_up(fleet: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    jvm = container(fleet[0], "inventory", "jvm")
    warm = jvm["memory"].iloc[24:]  # after two hours
    assert warm.std() / warm.mean() < 0.01
    assert jvm["memory"].iloc[0] < 0.5 * warm.mean()
    assert jvm["cpu"].max() > 2 * jvm["cpu"].median()  # GC spikes


def test_shorter_and_coarser_fleets(fleet: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    usage, events = demo_fleet(days=1, step=600)
    assert len(usage) == 9 * 144
    assert events.empty and list(events.columns) == list(fleet[1].columns)
    with pytest.raises(ValueError, match="positive"):
        demo_fleet(days=0)
