"""recommender.analysis: both models side by side, per-namespace totals, views, what-ifs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender import analysis
from recommender.advice import advise
from recommender.data.synthetic import demo_fleet
from recommender.recommend import recommend_forecast_workloads
from recommender.savings import savings_summary


@pytest.fixture(scope="module")
def demo() -> tuple[pd.DataFrame, pd.DataFrame]:
    return demo_fleet(days=4)


@pytest.fixture(scope="module")
def both(demo: tuple[pd.DataFrame, pd.DataFrame]) -> analysis.Recommendations:
    return analysis.recommend_both(*demo)


def test_both_models_give_the_recommend_library_paths_rows(
    demo: tuple[pd.DataFrame, pd.DataFrame], both: analysis.Recommendations
) -> None:
    pd.testing.assert_frame_equal(both.vpa, advise(*demo, "vpa"))
    pd.testing.assert_frame_equal(both.forecast, advise(*demo, "forecast"))
    _, schedule = recommend_forecast_workloads(*demo)
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


def test_savings_are_each_models_summary_side_by_side(both: analysis.Recommendations) -> None:
    table = analysis.savings(both)
    assert list(table.index) == ["demo", "total"]
    for model in ("vpa", "forecast"):
        summary = savings_summary(getattr(both, model))
        expected = summary.set_index(summary["namespace"].fillna("total")).drop(columns="namespace")
        mine = pd.DataFrame(table.xs(model, axis=1, level="model"))
        pd.testing.assert_frame_equal(mine, expected, check_names=False)
    assert table[("vpa", "cpu_now")].equals(table[("forecast", "cpu_now")])  # the same now


def test_side_by_side_puts_now_beside_both_targets(both: analysis.Recommendations) -> None:
    table = analysis.side_by_side(both)
    web = table[(table["workload"] == "web") & (table["container"] == "app")].iloc[0]
    assert web["pods"] == 2 and web["cpu_current"] == 1.0
    assert (
        web["cpu_target_vpa"]
        == both.vpa.set_index(analysis.KEYS).loc[("demo", "web", "app"), "cpu_target"]
    )
    assert not np.isnan(web["cpu_target_forecast"])


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
    assert "**demo/ledger/app**" in text and "p90" in text and "OOM kill" in text
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


def test_requests_read_elsewhere_are_the_current_ones_of_both_models(
    demo: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    """A cluster's pods give the currents (`tailor recommend` with no source flag)."""
    current = pd.DataFrame(
        {
            "namespace": ["demo"],
            "workload": ["ledger"],
            "container": ["app"],
            "cpu_current": [0.5],
            "memory_current": [2.0**30],
            "pods": [3],
        }
    )
    both = analysis.recommend_both(*demo, current=current)
    for rows in (both.vpa, both.forecast):
        ledger = rows[rows["workload"] == "ledger"].iloc[0]
        assert (ledger["cpu_current"], ledger["pods"]) == (0.5, 3)
        assert rows["cpu_current"].isna().sum() == len(rows) - 1  # the others: unknown
