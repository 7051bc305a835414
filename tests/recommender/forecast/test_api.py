"""The batch API the CLI and the live recommender call."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.data.arrays import KEY_COLUMNS, UsageArrays
from recommender.forecast.settings import ForecastSettings, MemorySettings, ReactionSettings
from recommender.recommend import SCHEDULE_COLUMNS, SERIES_COLUMNS, recommend_forecast
from tests.recommender.forecast import synthetic as syn


def _usage(days: float = 5.0) -> UsageArrays:
    cpu = [syn.daily(days), syn.noise(days), syn.on_off(days)]
    memory = [
        np.full(cpu[0].size, 2.0 * syn.GIB),
        np.full(cpu[1].size, 1.0 * syn.GIB),
        np.where(cpu[2] > 1, 6.0 * syn.GIB, 0.5 * syn.GIB),
    ]
    return syn.fleet(cpu, memory)


def test_recommendations_have_the_vpa_shape_and_explain_themselves() -> None:
    result = recommend_forecast(_usage())
    frame = result.recommendations
    assert list(frame.columns[: len(SERIES_COLUMNS)]) == list(SERIES_COLUMNS)
    assert len(frame) == 3
    numbers = frame[["cpu_lower", "cpu_target", "cpu_upper"]].to_numpy()
    assert (numbers[:, 0] <= numbers[:, 1]).all() and (numbers[:, 1] <= numbers[:, 2]).all()
    memory = frame[["memory_lower", "memory_target", "memory_upper"]].to_numpy()
    assert (memory[:, 0] <= memory[:, 1]).all() and (memory[:, 1] <= memory[:, 2]).all()
    season, kind, text = frame["season"], frame["workload_class"], frame["explanation"]
    assert season.tolist() == ["daily", "none", "none"]
    assert "daily cycle" in str(text[0]) and "stationary" in str(text[1])
    assert kind.tolist()[2] == "batch"
    assert all("margin" in text or "too little history" in text for text in frame.explanation)


def test_the_schedule_covers_the_horizon_in_update_periods() -> None:
    usage = _usage()
    result = recommend_forecast(usage)
    schedule = result.schedule
    assert list(schedule.columns) == list(SCHEDULE_COLUMNS)
    assert len(schedule) == 3 * (1 + 24)  # the block in force, then the next 24 h
    last = pd.Timestamp(usage.start + (usage.n_windows - 1) * usage.step, unit="s", tz="UTC")
    first = schedule.groupby("pod")["start"].min()
    assert (first == last.floor("h")).all()  # the block the last sample fell in
    assert ((schedule["end"] - schedule["start"]) == pd.Timedelta(hours=1)).all()
    assert (schedule["memory_limit"] == schedule["memory_request"]).all()
    daily = schedule[schedule.pod == "pod-0"]["cpu_request"].to_numpy()
    assert daily.max() > 1.5 * daily.min()  # the schedule follows the cycle
    # the stable target covers every scheduled value
    merged = schedule.merge(
        result.recommendations[[*KEY_COLUMNS, "cpu_target"]], on=list(KEY_COLUMNS)
    )
    assert (merged.cpu_request <= merged.cpu_target + 1e-12).all()


def test_an_oom_event_raises_and_explains_the_memory_recommendation() -> None:
    usage = _usage()
    end = pd.Timestamp(usage.start + usage.n_windows * usage.step, unit="s", tz="UTC")
    events = pd.DataFrame(
        {
            "timestamp": [end - pd.Timedelta(hours=1)],
            "namespace": ["ns"],
            "workload": ["pod-1"],
            "pod": ["pod-1"],
            "container": ["main"],
            "reason": ["OOMKilled"],
            "memory": [3.0 * syn.GIB],
        }
    )
    quiet = recommend_forecast(usage).recommendations
    killed = recommend_forecast(usage, events).recommendations
    killed_memory = killed["memory_target"].to_numpy()
    quiet_memory = quiet["memory_target"].to_numpy()
    assert killed_memory[1] >= 3.0 * 1.2 * syn.GIB
    assert quiet_memory[1] < 2.0 * syn.GIB
    assert killed["oom_kills"].tolist()[1] == 1
    assert "OOM kill" in str(killed["explanation"].tolist()[1])
    assert killed_memory[0] == quiet_memory[0]


def test_cpu_only_history_gives_nan_memory_and_short_history_still_works() -> None:
    cpu = np.vstack([syn.noise(0.25), syn.daily(0.25)])
    usage = UsageArrays(syn.keys(2), syn.START, syn.STEP, cpu, np.full(cpu.shape, np.nan))
    result = recommend_forecast(usage)
    frame = result.recommendations
    assert frame[["memory_target", "memory_lower", "memory_upper"]].isna().all().all()
    assert np.isfinite(frame["cpu_target"]).all()
    assert result.schedule["memory_request"].isna().all()
    assert "memory: not measured" in str(frame["explanation"].tolist()[0])


def test_a_series_without_samples_gets_nan_not_an_error() -> None:
    cpu = np.vstack([syn.noise(2.0), np.full(2 * syn.PER_DAY, np.nan)])
    memory = np.vstack([np.full(2 * syn.PER_DAY, syn.GIB), np.full(2 * syn.PER_DAY, np.nan)])
    frame = recommend_forecast(
        UsageArrays(syn.keys(2), syn.START, syn.STEP, cpu, memory)
    ).recommendations
    target = frame["cpu_target"].to_numpy()
    assert np.isfinite(target[0]) and np.isnan(target[1])


@pytest.mark.parametrize("period_hours", [1, 2])
def test_the_update_period_is_a_setting(period_hours: int) -> None:
    settings = ForecastSettings(update_period_seconds=period_hours * 3600)
    schedule = recommend_forecast(_usage(), settings=settings).schedule
    assert len(schedule) == 3 * (1 + 24 // period_hours)


@pytest.mark.parametrize(("shortfall", "quantile"), [(0.005, "P99.5"), (0.02, "P98")])
def test_a_young_series_says_which_quantile_of_its_usage_sized_it(
    shortfall: float, quantile: str
) -> None:
    """Too young for margins: the explanation names the quantile and headroom in use."""
    young = _usage(days=0.25)  # 6 hours: no level state has enough errors
    settings = ForecastSettings(
        target_cpu_shortfall=shortfall, reactions=ReactionSettings(react_margin=0.25)
    )
    frame = recommend_forecast(young, settings=settings).recommendations
    assert frame["cpu_margin"].isna().all()
    assert frame["cpu_margin_quantile"].isna().all()  # no margin, so no margin quantile
    assert np.allclose(frame["cpu_seen_quantile"], 1.0 - shortfall)
    for text in frame["explanation"]:
        assert f"{quantile} of what was seen +25% headroom" in text


def test_memory_is_explained_as_sized_per_state_only_where_a_state_is_lower() -> None:
    # flat memory in a daily CPU cycle: every state sees the same peak, so the limit is
    # the peak's, whatever the replay allowed; small sizes read in MiB, not "0.05 GiB"
    cpu = [syn.daily(5.0), syn.on_off(5.0)]
    memory = [np.full(cpu[0].size, 2.0 * syn.GIB), np.where(cpu[1] > 1, 0.3, 0.05) * syn.GIB]
    settings = ForecastSettings(
        memory=MemorySettings(oom_worth_bytes=2.0**20)
    )  # any saving buys sizing per state
    result = recommend_forecast(syn.fleet(cpu, memory), settings=settings)
    text = result.recommendations["explanation"].tolist()
    assert "memory: covers the peak of the remembered history 2.00 GiB +20%" in text[0]
    assert "sized per CPU state" in text[1] and "idle 51 MiB" in text[1]


def test_a_history_ending_mid_block_is_scheduled_from_the_block_in_force() -> None:
    """A plan made at 01:15 covers 01:00-02:00 too: a follower starting then, or one
    that missed the boundary's pass, has the period in force to apply."""
    usage = _usage()
    cut = usage.n_windows - 45 * 60 // usage.step  # the history ends 15 min into a block
    cpu, memory = usage.cpu[:, :cut], usage.memory[:, :cut]
    early = UsageArrays(usage.keys, usage.start, usage.step, cpu, memory)
    end = pd.Timestamp(early.start + early.n_windows * early.step, unit="s", tz="UTC")
    assert end.minute == 15
    result = recommend_forecast(early)
    schedule = result.schedule
    starts = sorted(schedule["start"].unique())
    assert starts[0] == end.floor("h") and starts[1] == end.ceil("h") and len(starts) == 25
    # nothing in force: the block in force sets what the next boundary would, at once
    by_pod = schedule.sort_values("start").groupby("pod")
    first, second = by_pod.nth(0), by_pod.nth(1)
    np.testing.assert_allclose(first["memory_request"], second["memory_request"])
    assert (first["cpu_request"].to_numpy() >= second["cpu_request"].to_numpy() - 1e-12).all()
    # the recommendation is the plan's: the same with or without the block in force
    planned = schedule[schedule["start"] >= end.ceil("h")]
    merged = planned.groupby("pod")["cpu_request"].max().to_numpy()
    np.testing.assert_allclose(result.recommendations["cpu_target"], merged)
