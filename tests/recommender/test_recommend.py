"""The library entry point: aggregation across pods, the pod minimum, OOM ordering."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from recommender.aggregates import vpa_rows
from recommender.data.schema import DataFormatError, validate_usage
from recommender.forecast.settings import ForecastSettings
from recommender.recommend import fit_vpa_model, recommend_forecast_workloads, recommend_vpa

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


def _spans(pods: dict[str, tuple[str, float, float, float]]) -> pd.DataFrame:
    """pod -> (workload, first day, last day, cores): 5-minute samples over [first, last)."""
    end = pd.Timestamp("2024-03-21", tz="UTC")
    frames = []
    for pod, (workload, first, last, cores) in pods.items():
        times = pd.date_range(
            end - pd.Timedelta(days=first), end - pd.Timedelta(days=last), freq="5min"
        )
        noise = np.random.default_rng(len(pod)).gamma(2.0, 0.02, times.size)
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": times[:-1],
                    "namespace": "ns",
                    "workload": workload,
                    "pod": pod,
                    "container": "app",
                    "cpu": cores + noise[:-1],
                    "memory": 400 * MIB,
                }
            )
        )
    return validate_usage(pd.concat(frames, ignore_index=True))


def _by_workload(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.set_index("workload")


def test_a_workload_quiet_for_days_is_planned_on_what_it_last_used() -> None:
    """A pod that stopped 9 days before the history's end (a weekly job, a scaled-down
    service) had no sample in the forecaster's recent window and came back all NaN."""
    recommendations, schedule = recommend_forecast_workloads(
        _spans({"live-1": ("live", 12, 0, 0.5), "weekly-1": ("weekly", 12, 9, 1.5)})
    )
    weekly = _by_workload(recommendations).loc["weekly"]
    assert 1.5 <= weekly.cpu_target <= 2.2
    assert 400 * MIB <= weekly.memory_target <= 500 * MIB
    assert "not measured" not in weekly.explanation
    assert schedule.loc[schedule["workload"] == "weekly", "cpu_request"].notna().all()


def test_a_workload_unseen_for_longer_than_the_history_kept_says_so() -> None:
    recommendations, schedule = recommend_forecast_workloads(
        _spans({"live-1": ("live", 20, 0, 0.5), "gone-1": ("gone", 20, 16, 1.5)})
    )
    gone = _by_workload(recommendations).loc["gone"]
    assert np.isnan(gone.cpu_target) and np.isnan(gone.memory_target)
    assert "no usage in the 14 days before the history's end" in gone.explanation
    assert "last sample 2024-03-04 23:55 UTC" in gone.explanation
    assert "gone" not in set(schedule["workload"])


def test_old_pods_of_a_live_workload_do_not_set_its_requests() -> None:
    """A rollout leaves the old pods' series behind: their last usage, sized without
    margins, must not outbid the running pods, nor must a stray sample from long ago."""
    fresh = _spans({"web-2": ("web", 12, 0, 0.5)})
    stray = pd.DataFrame(
        {
            "timestamp": [pd.Timestamp("1999-01-01", tz="UTC")],
            "namespace": "ns",
            "workload": "web",
            "pod": "web-0",
            "container": "app",
            "cpu": 40.0,
            "memory": 900 * MIB,
        }
    )
    with_old = pd.concat([fresh, _spans({"web-1": ("web", 20, 9, 4.0)}), stray], ignore_index=True)
    alone, alone_schedule = recommend_forecast_workloads(fresh)
    mixed, mixed_schedule = recommend_forecast_workloads(validate_usage(with_old))
    pd.testing.assert_frame_equal(alone, mixed)
    pd.testing.assert_frame_equal(alone_schedule, mixed_schedule)


def _kill_after_history(usage: pd.DataFrame, minutes: int) -> pd.DataFrame:
    return _kill_at(usage["timestamp"].max() + pd.Timedelta(minutes=minutes))


def _kill_at(when: pd.Timestamp) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp": [when],
            "namespace": ["ns"],
            "pod": ["web-1"],
            "container": ["app"],
            "reason": ["OOMKilled"],
            "memory": [800.0 * MIB],
        }
    )


@pytest.mark.parametrize("minutes", [1, 30, 2 * 24 * 60])
def test_a_kill_after_the_last_sample_raises_memory_in_both_models(minutes: int) -> None:
    """An OOM reported after the last usage sample is the latest news, as the live
    recommender would take it: the VPA model used it, the forecaster dropped it."""
    usage = _usage({"web-1": (0.1, 300 * MIB)}, hours=72)
    kill = _kill_after_history(usage, minutes)
    vpa_with, vpa_without = recommend_vpa(usage, kill).iloc[0], recommend_vpa(usage).iloc[0]
    assert vpa_with.memory_target > vpa_without.memory_target
    (forecast_with, plan_with), (forecast_without, _) = (
        recommend_forecast_workloads(usage, kill),
        recommend_forecast_workloads(usage),
    )
    # the bump: max(800 MiB x factor, (800 MiB + step) x margin) > 800 MiB, held 24 h
    assert forecast_with.iloc[0].memory_target >= 800 * MIB
    assert forecast_without.iloc[0].memory_target < 400 * MIB
    assert (plan_with["memory_request"] >= 800 * MIB).all()
    assert "1 OOM kill(s)" in forecast_with.iloc[0].explanation


def test_the_vpa_model_takes_kills_from_its_first_sample_on() -> None:
    """A kill a minute before the first sample made the target 3x (a peak of 960 MiB in a
    history of 300 MiB); the model had not started then, and upstream's recommender only learns of
    kills while it runs. A kill at the first sample still counts."""
    usage = _usage({"web-1": (0.1, 300 * MIB)}, hours=72)
    first = usage["timestamp"].min()
    without = recommend_vpa(usage)
    pd.testing.assert_frame_equal(
        recommend_vpa(usage, _kill_at(first - pd.Timedelta(minutes=1))), without
    )
    at_first = recommend_vpa(usage, _kill_at(first)).iloc[0]
    assert at_first.memory_target > 2 * without.iloc[0].memory_target


def test_the_forecaster_takes_kills_from_its_history_days_on() -> None:
    """It remembers the last history_days: a kill inside them counts even before the first
    sample, one older (400 days, or just past the cut of a 2-day memory) used to be
    counted in the explanation and is now dropped, as the samples of that time are."""
    usage = _usage({"web-1": (0.1, 300 * MIB)}, hours=72)
    first, last = usage["timestamp"].min(), usage["timestamp"].max()
    without = recommend_forecast_workloads(usage)
    for frame, plain in zip(
        recommend_forecast_workloads(usage, _kill_at(first - pd.Timedelta(days=400))),
        without,
        strict=True,
    ):
        pd.testing.assert_frame_equal(frame, plain)
    inside, _ = recommend_forecast_workloads(usage, _kill_at(first - pd.Timedelta(days=5)))
    assert "1 OOM kill(s), last 2024-02-25 00:00 UTC" in inside.iloc[0].explanation
    two_days = ForecastSettings(history_days=2.0, residual_days=1.0)
    cut = last - pd.Timedelta(days=2)
    dropped, _ = recommend_forecast_workloads(usage, _kill_at(cut), two_days)
    kept, _ = recommend_forecast_workloads(usage, _kill_at(cut + pd.Timedelta(seconds=1)), two_days)
    assert "OOM" not in dropped.iloc[0].explanation
    assert "1 OOM kill(s)" in kept.iloc[0].explanation


def test_a_recent_kill_before_a_short_history_holds_the_forecasters_memory() -> None:
    usage = _usage({"web-1": (0.1, 300 * MIB)}, hours=12)
    kill = _kill_at(usage["timestamp"].min() - pd.Timedelta(hours=1))
    recommendations, schedule = recommend_forecast_workloads(usage, kill)
    assert recommendations.iloc[0].memory_target >= 800 * MIB  # held 24 h from the kill
    assert schedule["memory_request"].max() >= 800 * MIB


def test_containers_in_mode_off_take_no_share_of_the_pod_minimum() -> None:
    """Upstream splits the 25m / 250Mi pod minimum among the containers it recommends for."""
    start = pd.Timestamp("2026-11-20T00:00:00Z")
    times = pd.date_range(start, periods=3 * 288, freq="5min")
    usage = pd.DataFrame(
        [
            {"timestamp": t, "namespace": "shop", "workload": "web", "pod": "web-1",
             "container": c, "cpu": 0.002, "memory": 3e7}
            for t in times
            for c in ("app", "sidecar")
        ]
    )  # fmt: skip
    model, aggregates = fit_vpa_model(usage)
    shared = vpa_rows(model, aggregates).set_index("container")
    assert shared.at["app", "cpu_target"] == pytest.approx(0.012)  # 12.5m in whole millicores
    alone = vpa_rows(model, aggregates, off=[("shop", "web", "sidecar")]).set_index("container")
    assert alone.at["app", "cpu_target"] == pytest.approx(0.025)
    assert alone.at["app", "memory_target"] == pytest.approx(250 * 2**20)


def test_a_workloads_explanation_says_each_resource_of_the_pod_that_sized_it() -> None:
    """CPU from the busy pod, memory from the killed one: the explanation used to be the
    busy pod's alone, naming a peak the limit was not sized on and no kill."""
    usage = _usage({"web-1": (0.1, 700 * MIB), "web-2": (2.0, 100 * MIB)}, hours=72)
    kill = _kill_at(usage["timestamp"].max() - pd.Timedelta(hours=2))  # web-1 at 800 MiB
    [row] = recommend_forecast_workloads(usage, kill)[0].to_dict(orient="records")
    cpu_said, memory_said = str(row["explanation"]).split(". memory: ")
    assert row["memory_target"] >= 800 * MIB
    assert "1 OOM kill(s)" in memory_said and "limit held" in memory_said
    assert cpu_said.startswith("cpu: ")
    [busy] = recommend_forecast_workloads(usage[usage["pod"] == "web-2"])[0]["explanation"]
    assert str(busy).split(". memory: ")[0] == cpu_said  # the busy pod's CPU sentence
