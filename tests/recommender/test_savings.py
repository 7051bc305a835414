"""recommender.savings and recommender.advice: currents, changes, severity and totals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.advice import advise
from recommender.data.synthetic import demo_fleet
from recommender.savings import (
    GIB,
    HOURS_PER_MONTH,
    Prices,
    current_requests,
    savings_summary,
    severity,
    with_changes,
    with_current,
)


def usage_rows() -> pd.DataFrame:
    times = pd.to_datetime(["2026-01-01T00:00Z", "2026-01-01T00:05Z"])
    rows = []
    for time in times:
        for pod, request in (("web-a", 0.5), ("web-b", 0.5 if time == times[0] else 0.7)):
            rows.append(("shop", "web", pod, "app", time, 0.1, 2.0**28, request, 2.0**29))
    rows.append(("shop", "db", "db-0", "pg", times[1], 0.2, 2.0**30, np.nan, np.nan))
    columns = ["namespace", "workload", "pod", "container", "timestamp", "cpu", "memory"]
    return pd.DataFrame(rows, columns=[*columns, "cpu_request", "memory_request"])


def test_current_requests_are_the_latest_samples_largest_and_count_pods() -> None:
    current = current_requests(usage_rows()).set_index("workload")
    assert current.loc["web", "cpu_current"] == 0.7  # web-b's new request, the largest now
    assert current.loc["web", "memory_current"] == 2.0**29
    assert current.loc["web", "pods"] == 2
    assert current["cpu_current"][current.index == "db"].isna().all()  # unknown, not 0


def test_a_history_without_request_columns_gives_unknown_currents() -> None:
    usage = usage_rows().drop(columns=["cpu_request", "memory_request"])
    current = current_requests(usage)
    assert current["cpu_current"].isna().all() and current["memory_current"].isna().all()


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        (np.nan, "unknown"),
        (0.05, "critical"),  # under the lower bound
        (0.2, "critical"),  # twice the target
        (0.18, "warning"),  # 80 % above the target, within the upper bound
        (0.11, "good"),
        (0.09, "good"),
    ],
)
def test_severity(current: float, expected: str) -> None:
    labels = severity(np.array([current]), np.array([0.1]), np.array([0.08]), np.array([0.3]))
    assert list(labels) == [expected]


def test_changes_and_summary_price_every_pod() -> None:
    rows = pd.DataFrame(
        {
            "namespace": ["a", "a", "b"],
            "workload": ["w", "x", "y"],
            "container": ["c", "c", "c"],
            "cpu_target": [0.5, 1.0, 2.0],
            "cpu_lower": [0.4, 0.9, 1.0],
            "cpu_upper": [0.8, 1.5, 3.0],
            "memory_target": [GIB, GIB, GIB],
            "memory_lower": [GIB / 2] * 3,
            "memory_upper": [2 * GIB] * 3,
        }
    )
    current = pd.DataFrame(
        {
            "namespace": ["a", "a", "b"],
            "workload": ["w", "x", "y"],
            "container": ["c", "c", "c"],
            "cpu_current": [1.0, np.nan, 2.0],
            "memory_current": [2 * GIB, GIB, 4 * GIB],
            "pods": [3, 1, 2],
        }
    )
    changed = with_changes(with_current(rows, current))
    assert changed.loc[0, "cpu_change"] == -0.5
    assert changed.loc[0, "cpu_change_ratio"] == -0.5
    assert changed.loc[0, "severity"] == "critical"  # twice the target
    assert changed.loc[1, "severity"] == "unknown"  # its cpu request is unknown
    prices = Prices(cpu=0.1, memory=0.01)
    summary = savings_summary(changed, prices)
    assert list(summary["namespace"][:2]) == ["a", "b"]
    assert summary["namespace"].iloc[-1] is None
    total = summary.iloc[-1]
    assert total["containers"] == 3 and total["known"] == 2  # x is left out of the sums
    assert total["cpu_now"] == pytest.approx(1.0 * 3 + 2.0 * 2)
    assert total["cpu_after"] == pytest.approx(0.5 * 3 + 2.0 * 2)
    assert total["memory_now"] == pytest.approx(2 * 3 + 4 * 2)
    expected_now = HOURS_PER_MONTH * (7.0 * 0.1 + 14.0 * 0.01)
    assert total["cost_now"] == pytest.approx(expected_now)
    assert total["saving"] == pytest.approx(total["cost_now"] - total["cost_after"])


def test_a_negative_price_is_refused() -> None:
    with pytest.raises(ValueError, match="cpu price"):
        Prices(cpu=-1.0)


@pytest.mark.parametrize("model", ["vpa", "forecast"])
def test_advise_explains_both_models_and_keeps_the_demo_requests(model: str) -> None:
    usage, events = demo_fleet()
    rows = advise(usage, events, model, checked=True)
    assert rows["explanation"].map(lambda said: isinstance(said, str) and len(said) > 20).all()
    assert rows["cpu_current"].notna().all()
    known = current_requests(usage).set_index(["namespace", "workload", "container"])
    merged = rows.join(
        known["cpu_current"].rename("known"), on=["namespace", "workload", "container"]
    )
    assert (merged["cpu_current"] == merged["known"]).all()
    if model == "vpa":
        said = " ".join(rows["explanation"])
        assert "p90" in said and "+15% margin" in said and "of history" in said
        killed = rows[rows["explanation"].str.contains("OOM kill")]
        assert set(killed["workload"]) == set(events[events.reason == "OOMKilled"].workload)
