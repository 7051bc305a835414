"""CPU held back by a limit counts as demand, in the data and in both models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.data.schema import DataFormatError, validate_usage
from recommender.data.throttling import has_throttling, throttling_notes, with_cpu_demand
from recommender.recommend import recommend_forecast_workloads, recommend_vpa

STEP = 300
DAYS = 4


def fleet(held_back: float = 0.3) -> pd.DataFrame:
    """Two identical containers at 0.2 cores under a 0.2-core limit; `capped` was
    throttled by `held_back` cores in every other window, `free` never."""
    times = pd.date_range("2026-01-01", periods=DAYS * 288, freq=f"{STEP}s", tz="UTC")
    rng = np.random.default_rng(7)
    cpu = np.clip(0.2 - rng.uniform(0, 0.01, times.size), 0, None)
    parts = []
    for pod, throttled in (("capped", held_back), ("free", 0.0)):
        parts.append(
            pd.DataFrame(
                {
                    "timestamp": times,
                    "namespace": "shop",
                    "pod": pod,
                    "container": "app",
                    "cpu": cpu,
                    "memory": 2.0**28,
                    "cpu_limit": 0.2,
                    "cpu_throttled": np.where(np.arange(times.size) % 2 == 0, throttled, 0.0),
                }
            )
        )
    return validate_usage(pd.concat(parts, ignore_index=True))


def target(frame: pd.DataFrame, pod: str) -> float:
    return float(frame.loc[frame["workload"] == pod, "cpu_target"].iloc[0])


def test_schema_takes_throttling_and_refuses_a_negative_one() -> None:
    usage = fleet()
    assert usage["cpu_throttled"].dtype == np.float64
    bad = usage.copy()
    bad.loc[5, "cpu_throttled"] = -0.1
    with pytest.raises(DataFormatError, match=r"row 6, column 'cpu_throttled': negative"):
        validate_usage(bad)


def test_demand_is_usage_plus_what_was_held_back() -> None:
    usage = fleet()
    demand = with_cpu_demand(usage)
    held = usage["cpu_throttled"].to_numpy()
    np.testing.assert_allclose(demand["cpu"], usage["cpu"] + held)
    assert usage["cpu"].max() < 0.21  # the input is left as it was


def test_without_throttling_the_frame_is_the_same_object() -> None:
    usage = fleet(held_back=0.0)
    assert not has_throttling(usage)
    assert with_cpu_demand(usage) is usage
    assert with_cpu_demand(usage.drop(columns="cpu_throttled")) is not None
    assert throttling_notes(usage, ["pod"]).empty


def test_unmeasured_throttling_counts_as_none() -> None:
    usage = fleet()
    usage.loc[usage["pod"] == "capped", "cpu_throttled"] = np.nan
    usage.loc[0, "cpu_throttled"] = 0.5
    demand = with_cpu_demand(usage)
    assert demand["cpu"].iloc[0] == pytest.approx(usage["cpu"].iloc[0] + 0.5)
    np.testing.assert_array_equal(demand["cpu"].iloc[1:], usage["cpu"].iloc[1:])


def test_notes_say_how_often_and_how_much() -> None:
    notes = throttling_notes(fleet(), ["pod"])
    assert list(notes["pod"]) == ["capped"]
    assert notes["throttling"].iloc[0] == (
        "its CPU limit throttled it in 50% of windows (up to 0.3 cores held back): "
        "sized on usage + throttled time"
    )


def test_vpa_model_sizes_a_throttled_container_on_its_demand() -> None:
    usage = fleet()
    counted = recommend_vpa(usage)
    assert target(counted, "free") < 0.25
    assert target(counted, "capped") > 0.45  # P90 of a demand at 0.5 half of the time
    said = counted.set_index("workload")["explanation"]
    assert "throttled it in 50%" in str(said["capped"])
    assert pd.isna(said["free"])
    ignored = recommend_vpa(usage, count_throttling=False)
    assert target(ignored, "capped") == target(ignored, "free")  # upstream sees usage only
    assert "explanation" not in ignored


def test_forecast_sizes_a_throttled_container_on_its_demand_and_says_so() -> None:
    usage = fleet()
    counted, schedule = recommend_forecast_workloads(usage, step=STEP)
    assert target(counted, "capped") > 0.45
    assert target(counted, "free") < 0.3
    said = counted.set_index("workload")["explanation"]
    assert "throttled it in 50%" in said["capped"]
    assert "throttled" not in said["free"]
    capped = schedule[schedule["workload"] == "capped"]["cpu_request"]
    assert capped.min() > 0.45
    ignored, _ = recommend_forecast_workloads(usage, step=STEP, count_throttling=False)
    assert target(ignored, "capped") == pytest.approx(target(ignored, "free"))
    assert "throttled" not in ignored.set_index("workload")["explanation"]["capped"]
