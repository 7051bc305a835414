"""`tailor hindsight`: the certified bound through the real entry point."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from tailor.cli.main import app

runner = CliRunner()


def test_the_bound_lies_below_what_the_vpa_reached_within_the_same_budget() -> None:
    replay = runner.invoke(
        app, ["backtest", "--demo", "--strategies", "vpa", "--format", "json", "--no-progress"]
    )
    assert replay.exit_code == 0, replay.output
    vpa = json.loads(replay.stdout)["strategies"]["vpa"]
    rate = vpa["cpu_shortfall_rate"]
    result = runner.invoke(app, ["hindsight", "--demo", "--budget-rate", f"{rate:.6f}"])
    assert result.exit_code == 0, result.output
    found = re.search(r"cpu_relative_slack > ([0-9.]+)", result.stdout)
    assert found is not None
    assert 0.0 < float(found.group(1)) < vpa["cpu_relative_slack"]


def test_bad_flags_are_refused() -> None:
    assert runner.invoke(app, ["hindsight", "--demo", "--resource", "disk"]).exit_code == 2
    assert (
        runner.invoke(app, ["hindsight", "--dataset", "azure", "--months", "2013-9"]).exit_code == 2
    )
    assert runner.invoke(app, ["hindsight", "--demo", "--budget-rate", "-1"]).exit_code == 2
    # the demo fleet's limits are not its requests: no memory bound for it
    assert runner.invoke(app, ["hindsight", "--demo", "--resource", "memory"]).exit_code == 2


def test_the_level_reference_is_printed_for_cpu_only() -> None:
    args = ["hindsight", "--demo", "--budget-rate", "0.02", "--level-block", "4h"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    found = re.search(
        r"level-clairvoyant cpu_relative_slack = ([0-9.]+) at shortfall ([0-9.]+)", result.stdout
    )
    assert found is not None
    assert 0.0 < float(found.group(1)) < 1.0
    assert float(found.group(2)) <= 0.02
    memory = ["hindsight", "--demo", "--resource", "memory", "--level-block", "4h"]
    assert runner.invoke(app, memory).exit_code == 2
    assert runner.invoke(app, [*args[:-1], "0h"]).exit_code == 2
