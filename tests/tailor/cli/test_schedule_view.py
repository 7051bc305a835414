"""`tailor schedule`'s answer, as `recommend`'s: each step beside the requests in force, the
change, the savings of following the plan; whole on an 80- or 100-column terminal."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.synthetic import demo_fleet
from recommender.recommend import recommend_forecast_workloads
from recommender.savings import (
    Prices,
    current_requests,
    savings_summary,
    schedule_changes,
    schedule_means,
    with_current,
)
from tailor.cli.main import app
from tailor.cli.output import short_cpu, short_memory
from tailor.cli.schedule import schedule_steps, schedule_view
from tailor.cli.tables import text_of
from tests.tailor.cli.test_recommend_view import LONG, column_text

runner = CliRunner()


def planned_demo() -> tuple[pd.DataFrame, pd.DataFrame]:
    usage, events = demo_fleet(days=3)
    usage["workload"] = usage["workload"].replace("inventory", LONG)
    usage["namespace"] = "payments-production-eu-west-1"
    events["namespace"] = "payments-production-eu-west-1"
    _, schedule = recommend_forecast_workloads(usage, events, checked=True)
    return schedule, current_requests(usage)


@pytest.mark.parametrize("width", [80, 100])
def test_no_schedule_cell_is_cut_at_an_ordinary_width(width: int) -> None:
    schedule, current = planned_demo()
    text = text_of(schedule_view(schedule, current, Prices()), width=width)
    lines = text.splitlines()
    assert "…" not in text
    assert max(len(line) for line in lines) <= width
    steps = schedule_steps(schedule_changes(schedule, current))
    for row in steps.to_dict(orient="records"):
        for resource, shown in (("cpu", short_cpu), ("memory", short_memory)):
            now, planned = float(row[f"{resource}_current"]), float(row[f"{resource}_request"])
            assert f"{shown(now)} → {shown(planned)}" in text
    header = next(line for line in lines if "from (UTC)" in line)
    body = lines[lines.index(header) + 2 : lines.index(next(x for x in lines if "cell:" in x))]
    names = column_text(body, 0, header.index("from (UTC)"))
    assert f"payments-production-eu-west-1/{LONG}/jvm" in names  # wrapped, every character


def test_the_footer_prices_the_mean_of_the_plan_against_now() -> None:
    schedule, current = planned_demo()
    means = schedule_means(schedule)
    one = schedule[schedule["container"] == "envoy"]
    seconds = (one["end"] - one["start"]).dt.total_seconds()
    mean = float((one["cpu_request"] * seconds).sum() / seconds.sum())
    assert means.loc[means["container"] == "envoy", "cpu_target"].item() == pytest.approx(mean)
    total = savings_summary(with_current(means, current), Prices(1.0, 0.0)).iloc[-1]
    text = text_of(schedule_view(schedule, current, Prices(1.0, 0.0)))
    footer = text[text.index("scheduled") :]
    assert f"{total['cpu_now']:.3g} → {total['cpu_after']:.3g}" in footer
    assert f"{total['cost_now']:,.0f} → {total['cost_after']:,.0f}" in footer


def test_csv_periods_carry_the_current_requests_and_the_change() -> None:
    result = runner.invoke(app, ["schedule", "--demo", "--format", "csv"])
    assert result.exit_code == 0, result.output
    periods = pd.read_csv(io.StringIO(result.stdout))
    usage, _ = demo_fleet()
    web = usage[usage["workload"] == "web"]
    now = web.groupby("container")["cpu_request"].last()
    for container, request in now.items():
        rows = periods[(periods["workload"] == "web") & (periods["container"] == container)]
        assert (rows["cpu_current"] == request).all()
        change = rows["cpu_request"] - request
        assert np.allclose(rows["cpu_change"], change)


def test_no_summary_drops_the_footer_and_json_stays_the_follow_file() -> None:
    table = runner.invoke(app, ["schedule", "--demo", "--no-summary"])
    assert table.exit_code == 0, table.output
    assert "cost / month" not in table.stdout and " → " in table.stdout
    plan = runner.invoke(app, ["schedule", "--demo", "--format", "json"])
    assert plan.exit_code == 0, plan.output
    assert "current" not in plan.stdout and "cost" not in plan.stdout


def test_recommend_takes_the_change_budget_for_the_forecast_only() -> None:
    refused = runner.invoke(app, ["recommend", "--demo", "--changes-per-day", "2"])
    assert refused.exit_code == 2
    assert "needs --strategy forecast" in refused.output
    args = ["recommend", "--demo", "--strategy", "forecast", "--format", "csv"]
    rows = {}
    for budget in ("1", "24"):
        result = runner.invoke(app, [*args, "--changes-per-day", budget])
        assert result.exit_code == 0, result.output
        rows[budget] = pd.read_csv(io.StringIO(result.stdout))

    # the forecast is played from the requests in force, the demo history's own changes
    # spending the budget: at one a day fewer containers may move their CPU than at 24
    def moved(frame: pd.DataFrame) -> int:
        return int((frame["cpu_change"].abs() > 1e-9).sum())

    assert moved(rows["1"]) < moved(rows["24"])
    assert not rows["1"]["cpu_target"].equals(rows["24"]["cpu_target"])
