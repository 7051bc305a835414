"""`tailor backtest --frontier`: the grids, the reading at vpa's risk, and the CLI."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from recommender.backtest import (
    BacktestInputError,
    BacktestResult,
    ExecutionSettings,
    ReplayHistory,
    prepare_history,
    run_backtest,
)
from recommender.backtest.frontier import (
    GRIDS,
    UNLIMITED_CHANGES,
    budget_of,
    efficient,
    frontier_variants,
    parse_budgets,
    read_off,
    readings_per_budget,
    run_frontier,
)
from recommender.backtest.registry import baseline_settings as parse_baseline_settings
from recommender.backtest.registry import resolve_strategies, with_baseline_settings
from recommender.backtest.report import render_report
from tailor.cli.backtest import backtest_command
from tailor.cli.backtest_output import budget_table, frontier_table, result_table
from tailor.cli.tables import table_text
from tests.recommender.backtest.helpers import PER_DAY, history, write_usage

app = typer.Typer()
app.command("backtest")(backtest_command)
app.command("noop")(lambda: None)


def _point(risk: float, slack: float) -> dict[str, float]:
    return {"cpu_shortfall_rate": risk, "cpu_relative_slack": slack}


def test_efficient_points_drop_the_beaten_ones() -> None:
    points = [_point(0.01, 0.5), _point(0.02, 0.6), _point(0.03, 0.3), _point(0.0, 0.9)]
    frontier = efficient(points, "cpu_shortfall_rate", "cpu_relative_slack")
    assert frontier.tolist() == [[0.0, 0.9], [0.01, 0.5], [0.03, 0.3]]


def test_read_off_interpolates_and_refuses_a_risk_never_reached() -> None:
    points = [_point(0.01, 0.5), _point(0.03, 0.3), _point(float("nan"), 0.1)]
    read = lambda at: read_off(points, "cpu_shortfall_rate", "cpu_relative_slack", at)  # noqa: E731
    assert read(0.02) == pytest.approx(0.4)
    assert read(0.01) == pytest.approx(0.5)
    assert read(0.5) == pytest.approx(0.3)  # more risk allowed than any point takes
    assert math.isnan(read(0.005))  # safer than any setting of the grid
    assert math.isnan(read(float("nan")))


def test_every_grid_point_is_a_variant_with_its_setting() -> None:
    [vpa] = resolve_strategies("vpa")
    variants = frontier_variants(vpa)
    axes = GRIDS["vpa"].axes
    assert len(variants) == math.prod(len(values) for values in axes.values())
    default = variants[0]
    assert default.spec is vpa and default.setting["default"] is True
    # the default values are on the grid: that point is the default, not a second replay
    assert default.setting["model.target_percentile"] == 0.9
    settings = {tuple(sorted(v.setting.items())) for v in variants}
    assert len(settings) == len(variants)
    assert len({v.spec.name for v in variants}) == len(variants)


def test_the_forecast_grid_reaches_down_to_a_request_that_holds_a_daily_cycle() -> None:
    """The grid's safe end (cuts only by 90 %) falls short less than the default point
    on a smooth daily cycle, and pays for it in slack: a dial, not a free lunch."""
    [forecast] = resolve_strategies("forecast")
    variants = frontier_variants(forecast)
    assert len(variants) == 3 * 3 * 2
    assert variants[0].setting["hysteresis.decrease_threshold"] == 0.15  # the default
    safe_end = next(
        v
        for v in variants
        if v.setting
        == {"vpa_parity_factor": 0.6, "memory_margin": 0.2, "hysteresis.decrease_threshold": 0.9}
    )
    rng = np.random.default_rng(5)
    windows = np.arange(4 * PER_DAY)
    cycle = 0.6 + 0.4 * np.sin(2 * np.pi * windows / PER_DAY)
    cpu = np.abs(cycle[None, :] * rng.normal(1.0, 0.08, (2, windows.size)))
    replay = prepare_history(history(cpu, memory=np.full_like(cpu, 2.0**30)))
    specs = [variants[0].spec, safe_end.spec]
    points = run_backtest(replay, strategies=specs, execution=ExecutionSettings(workers=1))
    default, safe = (points.summary[spec.name] for spec in specs)
    assert safe["cpu_shortfall_rate"] < default["cpu_shortfall_rate"]
    assert safe["cpu_relative_slack"] > default["cpu_relative_slack"]


def test_budgets_multiply_only_strategies_that_have_one() -> None:
    vpa, krr = resolve_strategies("vpa,krr")
    budgets = (6, 24)
    assert len(frontier_variants(vpa, budgets)) == len(frontier_variants(vpa))
    swept = frontier_variants(krr, budgets)
    assert {v.setting.get("policy.max_changes_per_day") for v in swept} == {None, *budgets}
    assert len(swept) == 2 * 12 + 1  # krr's own budget (none) is the extra default point


def test_a_grid_applies_on_top_of_the_settings_given() -> None:
    specs = resolve_strategies("krr")
    chosen = parse_baseline_settings(["krr:history_seconds=86400"])
    [krr] = with_baseline_settings(specs, chosen)
    variants = frontier_variants(krr)
    for variant in variants[1:]:
        factory = variant.spec.factory
        assert isinstance(factory, functools.partial)
        assert factory.keywords["settings"].history_seconds == 86400


def test_oracle_and_imported_strategies_are_their_default_point() -> None:
    [oracle] = resolve_strategies("oracle")
    assert [v.setting for v in frontier_variants(oracle)] == [{"default": True}]


def test_parse_budgets() -> None:
    assert parse_budgets("6, 12,unlimited") == (6, 12, UNLIMITED_CHANGES)
    for bad in ("", "six", "0", "6,6", "1000"):
        with pytest.raises(BacktestInputError):
            parse_budgets(bad)


@pytest.fixture(scope="module")
def swept() -> tuple[BacktestResult, BacktestResult, ReplayHistory]:
    """vpa and krr over their grids (krr's at budgets of 1 and 24 changes a day), and
    alone, on three noisy containers."""
    rng = np.random.default_rng(3)
    cpu = np.abs(rng.normal(0.5, 0.2, (3, PER_DAY + PER_DAY // 2)))
    replay = prepare_history(history(cpu, memory=(0.5 + cpu) * 2.0**30))
    specs = resolve_strategies("vpa,krr")
    result = run_frontier(replay, specs, ExecutionSettings(workers=2), budgets=(1, 24))
    alone = run_backtest(replay, strategies=specs, execution=ExecutionSettings(workers=1))
    return result, alone, replay


def test_frontier_run_keeps_the_default_points_and_orders_risk_against_slack(
    swept: tuple[BacktestResult, BacktestResult, ReplayHistory],
) -> None:
    result, alone, _ = swept
    assert result.strategies == ("vpa", "krr")
    for name, points in (("vpa", 12), ("krr", 2 * 12 + 1)):  # krr: its default, no cap
        assert result.summary[name] == pytest.approx(alone.summary[name], nan_ok=True)
        assert len(result.frontiers[name]) == points
    vpa_points = {
        (p["setting"]["model.target_percentile"], p["setting"]["model.safety_margin"]): p
        for p in result.frontiers["vpa"]
    }
    # a higher percentile and margin leave more CPU slack and no more shortfall
    safe, risky = vpa_points[(0.99, 0.3)], vpa_points[(0.8, 0.0)]
    assert safe["cpu_relative_slack"] > risky["cpu_relative_slack"]
    assert safe["cpu_shortfall_rate"] <= risky["cpu_shortfall_rate"]
    assert (
        result.readings["krr"]["cpu_shortfall_rate"] == result.summary["vpa"]["cpu_shortfall_rate"]
    )
    # vpa read at its own default risk is at most its default slack
    vpa_read = result.readings["vpa"]["cpu_relative_slack"]
    assert vpa_read <= result.summary["vpa"]["cpu_relative_slack"] + 1e-12
    document = result.to_dict()
    point = document["strategies"]["krr"]["frontier"][3]
    assert set(point["setting"]) == {
        "cpu_percentile",
        "memory_buffer",
        "policy.max_changes_per_day",
    }
    assert document["strategies"]["krr"]["at_vpa_default"]["cpu_relative_slack"] == (
        pytest.approx(result.readings["krr"]["cpu_relative_slack"], nan_ok=True)
    )


def test_readings_per_budget_read_each_budget_s_points_alone() -> None:
    def point(risk: float, slack: float, budget: int | None) -> dict[str, object]:
        setting = {} if budget is None else {"max_changes_per_day": budget}
        return {**_point(risk, slack), "setting": setting}

    frontiers = {
        "forecast": [point(0.01, 0.5, None), point(0.02, 0.4, 6), point(0.01, 0.3, 24)],
        "vpa": [point(0.02, 0.6, None)],
    }
    read = readings_per_budget(frontiers, {"cpu_shortfall_rate": 0.02})
    assert set(read) == {"forecast"}  # vpa has no budget; the default point is neither's
    assert read["forecast"][6]["cpu_relative_slack"] == pytest.approx(0.4)
    assert read["forecast"][24]["cpu_relative_slack"] == pytest.approx(0.3)
    assert budget_of({"policy.max_changes_per_day": 12, "cpu_percentile": 0.9}) == 12


def test_budgets_are_read_apart_in_json_and_table(
    swept: tuple[BacktestResult, BacktestResult, ReplayHistory],
) -> None:
    result = swept[0]
    assert set(result.budget_readings) == {"krr"}
    for budget in (1, 24):
        points = [
            p
            for p in result.frontiers["krr"]
            if p["setting"].get("policy.max_changes_per_day") == budget
        ]
        assert len(points) == 12
        at = result.summary["vpa"]["oom_per_container_day"]
        expected = read_off(points, "oom_per_container_day", "memory_relative_slack", at)
        got = result.budget_readings["krr"][budget]["memory_relative_slack"]
        assert got == pytest.approx(expected, nan_ok=True)
    per_budget = result.to_dict()["strategies"]["krr"]["at_vpa_default_per_budget"]
    assert set(per_budget) == {"1", "24"}
    text = table_text(budget_table(result))
    assert "frontier per change budget" in text and text.count("krr") == 1
    page = render_report(swept[2], result, resolve_strategies("vpa,krr"), containers=1)
    section = page[page.index("<h3>Per change budget</h3>") :]
    one = result.budget_readings["krr"][1]["memory_relative_slack"]
    assert "<tr><td>1</td><td>memory slack</td>" in section
    assert "<tr><td>24</td><td>CPU slack</td>" in section
    assert (
        f"<tr><td>1</td><td>memory slack</td><td>{'n/a' if math.isnan(one) else f'{one:.4g}'}"
        in section
    )


def test_frontier_table_and_report(
    swept: tuple[BacktestResult, BacktestResult, ReplayHistory],
) -> None:
    result, _, replay = swept
    text = table_text(result_table(result)) + table_text(frontier_table(result))
    # each reading named in words at vpa's risk, its JSON keys under it
    assert "at vpa's CPU shortfall" in text and "cpu_relative_slack at cpu_shortfall_rate" in text
    assert "at vpa's OOM kills per container-day" in text
    assert "memory_relative_slack at oom_per_container_day" in text
    assert text.count("krr") >= 13  # the column, the default and the eleven other points
    page = render_report(replay, result, resolve_strategies("vpa,krr"), containers=1)
    assert "<h2>Frontiers</h2>" in page and page.count("data:image/png") >= 4


def test_cli_frontier_json(tmp_path: Path) -> None:
    usage = write_usage(tmp_path, history(np.linspace(0.2, 1.0, 2 * PER_DAY)))
    outcome = CliRunner().invoke(
        app,
        [
            "backtest",
            "--input",
            str(usage),
            "--strategies",
            "oracle",
            "--frontier",
            "--format",
            "json",
            "--workers",
            "1",
            "--no-progress",
        ],
    )
    assert outcome.exit_code == 0, outcome.output
    oracle = json.loads(outcome.stdout)["strategies"]["oracle"]
    assert [point["setting"] for point in oracle["frontier"]] == [{"default": True}]
    assert oracle["frontier"][0]["cpu_relative_slack"] == oracle["cpu_relative_slack"]
    assert "at_vpa_default" not in oracle  # no vpa run, nothing to read off at


def test_cli_budgets_need_the_frontier(tmp_path: Path) -> None:
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    outcome = CliRunner().invoke(
        app, ["backtest", "--input", str(usage), "--budgets", "6", "--no-progress"]
    )
    assert outcome.exit_code != 0
    assert "--budgets goes with --frontier" in outcome.output
    outcome = CliRunner().invoke(
        app, ["backtest", "--input", str(usage), "--frontier", "--budgets", "6,x"]
    )
    assert outcome.exit_code != 0
    assert "budget 'x'" in outcome.output
