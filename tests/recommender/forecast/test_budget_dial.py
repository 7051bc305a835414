"""`tailor schedule --changes-per-day`: the published schedule keeps to the budget asked."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from recommender.forecast.settings import ForecastSettings
from tailor.cli.main import app
from tests.recommender.backtest.helpers import PER_DAY, history, write_usage


def _changes(rows: list[dict[str, object]]) -> int:
    cpu = [row["cpu"] for row in sorted(rows, key=lambda row: str(row["start"]))]
    return sum(1 for before, after in itertools.pairwise(cpu) if before != after)


def test_the_schedule_keeps_to_the_budget_asked(tmp_path: Path) -> None:
    hours = np.arange(4 * PER_DAY) / (PER_DAY / 24)
    cpu = 1.0 + 0.9 * np.sin(hours * 2 * np.pi / 24)  # a daily cycle: a change every hour pays
    usage = write_usage(tmp_path, history(cpu))

    def schedule(*flags: str) -> list[dict[str, object]]:
        args = ["schedule", "--input", str(usage), "--format", "json", *flags]
        outcome = CliRunner().invoke(app, args)
        assert outcome.exit_code == 0, outcome.output
        return list(json.loads(outcome.stdout))

    hourly = _changes(schedule("--changes-per-day", "24"))
    strict = _changes(schedule("--changes-per-day", "2"))
    assert strict <= 2 < hourly
    refused = CliRunner().invoke(app, ["schedule", "--input", str(usage), "--changes-per-day", "0"])
    assert refused.exit_code != 0


def test_a_budget_keeps_the_reserve_below_it() -> None:
    assert ForecastSettings().with_budget(1).reserved_changes == 0
    assert ForecastSettings().with_budget(24).reserved_changes == 1
    assert ForecastSettings().with_budget(24).max_changes_per_day == 24
