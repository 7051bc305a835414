"""`tailor backtest` and `tailor hindsight` read by people: metrics named in words with the
way that is better, one precision per metric, nothing cut at 80 or 100 columns; hindsight
says what its bound means."""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache

import pytest
from typer.testing import CliRunner

from recommender.backtest import (
    BacktestResult,
    prepare_history,
    resolve_strategies,
    run_backtest,
)
from recommender.backtest.frontier import readings
from recommender.backtest.metrics import METRIC_NAMES
from recommender.data.synthetic import demo_fleet
from tailor.cli.backtest_output import METRIC_VIEWS, figure, frontier_table, result_table
from tailor.cli.main import app
from tailor.cli.tables import text_of
from tests.tailor.cli.test_recommend_view import column_text


@cache
def frontier_result() -> BacktestResult:
    """A replay of a small fleet, with frontiers of a few points around each default (a
    real frontier sweep takes minutes; the view only needs its shape)."""
    usage, events = demo_fleet(days=3)
    strategies = resolve_strategies("vpa,krr,autopilot,oracle")
    result = run_backtest(prepare_history(usage, events), strategies=strategies)
    frontiers = {
        name: [
            {**result.summary[name], "setting": {"margin": scale, "default": scale == 1.0}}
            | {"cpu_relative_slack": result.summary[name]["cpu_relative_slack"] * scale}
            for scale in (0.5, 1.0, 1.5)
        ]
        for name in result.strategies
    }
    baseline = result.summary["vpa"]
    return replace(result, frontiers=frontiers, readings=readings(frontiers, baseline))


@pytest.mark.parametrize("width", [80, 100])
def test_no_backtest_cell_is_cut_at_an_ordinary_width(width: int) -> None:
    result = frontier_result()
    for table in (result_table(result), frontier_table(result)):
        text = text_of(table, width=width)
        assert "…" not in text
        assert max(len(line) for line in text.splitlines()) <= width
    text = text_of(result_table(result), width=width)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("metric"))
    labels = column_text(lines, 0, header.index("vpa") - 4).replace(" ", "")
    for metric in METRIC_NAMES:
        view = METRIC_VIEWS[metric]
        assert f"{view.label}({view.better})".replace(" ", "") in labels, metric
        for name in result.strategies:  # every figure whole, at its metric's precision
            assert figure(result.summary[name][metric], view.kind) in text, (metric, name)
    frontier = text_of(frontier_table(result), width=width)
    for points in result.frontiers.values():
        for point in points:
            assert figure(point["cpu_relative_slack"], "share") in frontier


def test_a_row_holds_one_precision() -> None:
    result = frontier_result()
    text = text_of(result_table(result), width=100)
    row = next(line for line in text.splitlines() if line.startswith("CPU slack"))
    shares = re.findall(r"-?\d+\.(\d+)%", row)
    assert len(shares) == len(result.strategies) and {len(s) for s in shares} == {1}
    assert "lower is better" in row


def test_hindsight_says_what_the_bound_means() -> None:
    result = CliRunner().invoke(app, ["hindsight", "--demo", "--changes-per-day", "2"])
    assert result.exit_code == 0, result.output
    bound = re.search(r"cpu_relative_slack > ([0-9.]+)", result.stdout)
    assert bound is not None
    said = " ".join(result.stdout.split())
    percent = f"{float(bound.group(1)) * 100:.1f}%"
    assert f"leaves less than {percent} of the CPU it requests unused" in said
    assert "no strategy, not even one that knows the future" in said
    assert "makes at most 2 request changes per container-day" in said
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
