"""recommender.analysis: both models side by side, per-namespace totals, views, what-ifs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender import analysis
from recommender.data.synthetic import demo_fleet
from recommender.recommend import recommend_forecast_workloads, recommend_vpa


@pytest.fixture(scope="module")
def demo() -> tuple[pd.DataFrame, pd.DataFrame]:
    return demo_fleet(days=4)


@pytest.fixture(scope="module")
def both(demo: tuple[pd.DataFrame, pd.DataFrame]) -> analysis.Recommendations:
    return analysis.recommend_both(*demo)


def test_both_models_give_the_library_entry_points_rows(
    demo: tuple[pd.DataFrame, pd.DataFrame], both: analysis.Recommendations
) -> None:
    pd.testing.assert_frame_equal(both.vpa, recommend_vpa(*demo))
    forecast, schedule = recommend_forecast_workloads(*demo)
    pd.testing.assert_frame_equal(both.forecast, forecast)
    pd.testing.assert_frame_equal(both.schedule, schedule)


def test_the_bands_cover_the_schedule_blocks_with_the_margin_on_top(
    both: analysis.Recommendations,
) -> None:
    keys = [*analysis.KEYS, "start", "end"]
    joined = both.bands.merge(both.schedule, on=keys, how="left")
    assert len(joined) == len(both.bands) and joined["cpu_request"].notna().all()
    planned = joined.dropna(subset=["cpu_forecast"])  # the JVM's flat CPU: no forecast
    assert len(planned) >= 6 * 24
    assert (planned["cpu_required"] >= planned["cpu_forecast"] - 1e-12).all()


def test_current_requests_are_the_last_samples_largest_pod() -> None:
    stamp = pd.Timestamp("2024-01-01T00:00:00Z")
    usage = pd.DataFrame(
        {
            "timestamp": [stamp, stamp + pd.Timedelta("5min"), stamp + pd.Timedelta("5min")],
            "namespace": "ns",
            "workload": "w",
            "pod": ["a", "a", "b"],
            "container": "c",
            "cpu": 0.1,
            "memory": 1.0,
            "cpu_request": [9.0, 0.5, 0.7],
            "memory_request": [9.0, 100.0, np.nan],
        }
    )
    current = analysis.current_requests(usage)
    assert current[["cpu_current", "memory_current"]].iloc[0].tolist() == [0.7, 100.0]


def test_namespace_totals_add_up_and_count_savings_only_where_now_is_known() -> None:
    table = pd.DataFrame(
        {
            "namespace": ["a", "a", "b"],
            "workload": ["x", "y", "z"],
            "container": "c",
            "cpu_current": [1.0, np.nan, 2.0],
            "memory_current": [2.0**30, 2.0**30, np.nan],
            "cpu_target_vpa": [0.5, 0.25, 1.0],
            "memory_target_vpa": [2.0**29, 2.0**29, 2.0**30],
            "cpu_target_forecast": [0.4, 0.2, 3.0],
            "memory_target_forecast": [2.0**30, 2.0**30, 2.0**30],
        }
    )
    totals = analysis.namespace_totals(table)
    cpu = totals["cpu"]
    assert cpu.loc["a"].tolist() == pytest.approx([1.0, 0.75, 0.5, 0.6, 0.6])  # y's unknown
    assert cpu.loc["all", "forecast"] == pytest.approx(3.6)
    assert cpu.loc["all", "saved_forecast"] == pytest.approx(0.6 - 1.0)
    memory = totals["memory_gib"]
    assert memory.loc["b", "now"] != memory.loc["b", "now"]  # NaN: nothing known
    assert memory.loc["all", "saved_vpa"] == pytest.approx(1.0)


def test_a_view_holds_one_containers_usage_kills_and_rows(
    both: analysis.Recommendations,
) -> None:
    view = analysis.workload_view(both, ("demo", "ledger", "app"))
    assert set(view.usage["pod"]) == {"ledger-6d8f7c-h3j5k"}
    assert len(view.ooms) >= 1 and (view.ooms["memory"] > 0).all()
    assert view.vpa["workload"] == view.forecast["workload"] == "ledger"
    assert len(view.bands) == 24  # the coming day's blocks, the block in force before them
    assert view.schedule["start"].iloc[1:].tolist() == view.bands["start"].tolist()
    text = analysis.explanation_markdown(view)
    assert "**demo/ledger/app**" in text and "P90" in text and "OOM kill" in text
    with pytest.raises(KeyError, match="no container demo/ledger/nope"):
        analysis.workload_view(both, ("demo", "ledger", "nope"))


def test_what_if_a_higher_percentile_requests_more_and_leaves_fewer_samples_above(
    demo: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    frame = analysis.what_if(*demo, "target percentile (vpa)", (0.5, 0.9, 0.99))
    assert frame["cpu_target_cores"].is_monotonic_increasing
    assert frame["cpu_samples_above_target"].is_monotonic_decreasing
    assert frame["scheduled_cpu_cores"].isna().all()
    budget = analysis.what_if(*demo, "changes per day (forecast)", (2, 24))
    assert budget["scheduled_cpu_cores"].iloc[1] < budget["scheduled_cpu_cores"].iloc[0]
    with pytest.raises(KeyError, match="unknown knob"):
        analysis.what_if(*demo, "margin", (0.1,))
