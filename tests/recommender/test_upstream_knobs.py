"""Upstream's newer knobs in our models: a VPA's own OOM bump, per-resource percentiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from recommender.forecast.memory import bump_after_oom
from recommender.forecast.settings import ForecastSettings
from recommender.oom_bumps import OomBumpError, checked_oom_bumps, series_oom_bumps
from recommender.overrides import SettingsError
from recommender.recommend import recommend_forecast_workloads, recommend_vpa
from recommender.vpa.settings import VpaSettings
from tests.recommender.test_recommend import MIB, _kill_after_history, _usage


def _two_workloads() -> tuple[pd.DataFrame, pd.DataFrame]:
    """`web` and `api`, alike in usage, each OOM-killed at 800 MiB 30 min after the history."""
    web = _usage({"web-1": (0.1, 300 * MIB)}, hours=72)
    api = web.assign(workload="api", pod="api-1")
    usage = pd.concat([web, api], ignore_index=True).sort_values(
        ["namespace", "workload", "pod", "container", "timestamp"], ignore_index=True
    )
    kill = _kill_after_history(web, 30)
    kills = pd.concat([kill, kill.assign(pod="api-1")], ignore_index=True)
    return usage, kills


def _rows(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Each workload's row as a plain dict."""
    return {
        str(row["workload"]): {str(k): v for k, v in row.items()}
        for row in frame.to_dict(orient="records")
    }


def _bumps(ratio: float, least: float, workload: str = "web") -> pd.DataFrame:
    return pd.DataFrame(
        [("ns", workload, "app", ratio, least)],
        columns=["namespace", "workload", "container", "oom_bump_ratio", "oom_min_bump"],
    )


def test_the_vpa_model_bumps_a_container_as_its_vpa_says_and_others_as_the_flags_say() -> None:
    usage, kills = _two_workloads()
    default = _rows(recommend_vpa(usage, kills))
    bumped = _rows(recommend_vpa(usage, kills, oom_bumps=_bumps(3.0, 0.0)))
    assert bumped["api"] == default["api"]
    assert bumped["web"]["memory_target"] > 2 * default["web"]["memory_target"]
    # the same numbers as the whole model run with those flags
    alone = usage[usage["workload"] == "web"]
    flags = VpaSettings(oom_bump_ratio=3.0, oom_min_bump=0.0)
    [expected] = recommend_vpa(alone, kills, flags).to_dict(orient="records")
    assert bumped["web"]["memory_target"] == expected["memory_target"]
    assert bumped["web"]["memory_upper"] == expected["memory_upper"]


def test_an_unset_field_keeps_the_flags_value() -> None:
    usage, kills = _two_workloads()
    default = recommend_vpa(usage, kills)
    pd.testing.assert_frame_equal(
        recommend_vpa(usage, kills, oom_bumps=_bumps(np.nan, np.nan)), default
    )
    # a minimum bump alone: 800 MiB + 2 GiB beats 1.2 x 800 MiB
    big_step = recommend_vpa(usage, kills, oom_bumps=_bumps(np.nan, 2048 * MIB))
    flags = VpaSettings(oom_min_bump=2048 * MIB)
    alone = recommend_vpa(usage[usage["workload"] == "web"], kills, flags)
    assert _rows(big_step)["web"]["memory_target"] == _rows(alone)["web"]["memory_target"]


def test_the_forecaster_scales_its_bump_by_the_vpas_ratio_over_upstreams() -> None:
    settings = ForecastSettings()
    memory = np.array([800.0 * MIB, 800.0 * MIB, 10.0 * MIB])
    ratio = np.array([1.2, 2.4, np.nan])
    least = np.array([np.nan, np.nan, 500.0 * MIB])
    bumped = bump_after_oom(memory, settings, (ratio, least))
    default = bump_after_oom(memory, settings)
    assert bumped[0] == default[0]  # 1.2, upstream's default, gives the default factor
    assert bumped[1] == pytest.approx(800 * MIB * settings.memory.oom_bump_factor * 2)
    assert bumped[2] == pytest.approx(510 * MIB * (1 + settings.memory_margin))
    usage, kills = _two_workloads()
    plain_rows, _ = recommend_forecast_workloads(usage, kills)
    rows, plan = recommend_forecast_workloads(usage, kills, oom_bumps=_bumps(2.4, 0.0))
    web, api = _rows(rows)["web"], _rows(rows)["api"]
    assert api["memory_target"] == _rows(plain_rows)["api"]["memory_target"]
    assert web["memory_target"] >= 800 * MIB * settings.memory.oom_bump_factor * 2 * 0.999
    assert (plan[plan["workload"] == "web"]["memory_request"] >= 1.5 * api["memory_target"]).all()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (_bumps(0.5, 0), "at least 1"),
        (_bumps(np.inf, 0), "at least 1"),
        (_bumps(1.5, -1), ">= 0"),
        (pd.concat([_bumps(1.5, 0), _bumps(2, 0)]), "ns/web/app more than once"),
        (_bumps(1.5, 0).drop(columns=["oom_min_bump"]), "oom_min_bump"),
        (_bumps(1.5, 0).assign(oom_bump_ratio="x"), "must be numbers"),
    ],
)
def test_a_bad_bump_table_is_refused(table: pd.DataFrame, message: str) -> None:
    with pytest.raises(OomBumpError, match=message):
        checked_oom_bumps(table)
    usage, kills = _two_workloads()
    with pytest.raises(OomBumpError, match=message):
        recommend_vpa(usage, kills, oom_bumps=table)


def test_bumps_are_spread_over_the_series_of_their_workload() -> None:
    keys = pd.DataFrame(
        {
            "namespace": ["ns", "ns", "ns", "other"],
            "workload": ["web", "web", "api", "web"],
            "pod": ["web-1", "web-2", "api-1", "web-1"],
            "container": ["app", "app", "app", "app"],
        }
    )
    ratio, least = series_oom_bumps(keys, _bumps(2.0, 5.0))
    np.testing.assert_array_equal(ratio, [2.0, 2.0, np.nan, np.nan])
    np.testing.assert_array_equal(least, [5.0, 5.0, np.nan, np.nan])


def test_upstreams_per_resource_percentiles_move_only_their_resource() -> None:
    """--target-cpu-percentile and its kin: cpu_target_percentile=0.5 is target_percentile=0.5
    for CPU alone; memory keeps the shared 0.9."""
    usage, _ = _two_workloads()
    day = (usage["timestamp"] - usage["timestamp"].min()).dt.days
    usage = usage.assign(
        cpu=np.where(usage["timestamp"].dt.minute < 40, 0.1, 1.0),  # P50 0.1, P90 1.0
        memory=(200.0 + 400.0 * (day == 0)) * MIB,  # one tall day among low ones
    )
    split = recommend_vpa(usage, None, VpaSettings(cpu_target_percentile=0.5))
    both = recommend_vpa(usage, None, VpaSettings(target_percentile=0.5))
    shared = recommend_vpa(usage)
    cpu = ["cpu_target", "cpu_lower", "cpu_upper"]
    memory = ["memory_target", "memory_lower", "memory_upper"]
    pd.testing.assert_frame_equal(split[cpu], both[cpu])
    pd.testing.assert_frame_equal(split[memory], shared[memory])
    assert (split["cpu_target"] < shared["cpu_target"] / 2).all()
    memory_only = recommend_vpa(usage, None, VpaSettings(memory_upper_percentile=0.5))
    pd.testing.assert_frame_equal(memory_only[cpu], shared[cpu])
    assert (memory_only["memory_upper"] < shared["memory_upper"]).all()


def test_upstreams_per_resource_confidence_intervals_move_only_their_bounds() -> None:
    """--confidence-interval-cpu / --confidence-interval-memory: a longer "day" of confidence
    widens that resource's bounds alone; the targets carry no confidence."""
    usage, _ = _two_workloads()
    shared = recommend_vpa(usage)
    wide = recommend_vpa(usage, None, VpaSettings(memory_confidence_interval=7 * 86400.0))
    cpu = ["cpu_target", "cpu_lower", "cpu_upper"]
    pd.testing.assert_frame_equal(wide[cpu], shared[cpu])
    assert (wide["memory_target"] == shared["memory_target"]).all()
    assert (wide["memory_upper"] > shared["memory_upper"]).all()
    assert (wide["memory_lower"] < shared["memory_lower"]).all()
    with pytest.raises(SettingsError, match="cpu_confidence_interval must be positive"):
        VpaSettings(cpu_confidence_interval=0.0)
