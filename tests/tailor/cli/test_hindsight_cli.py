"""`tailor hindsight`: the certified bound through the real entry point."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tailor.cli.main import app
from tests.cli_text import plain
from tests.recommender.backtest.helpers import GIB, PER_DAY, history, write_usage

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
    # a shortfall rate is a share of windows; a block must hold whole windows
    over = runner.invoke(app, ["hindsight", "--demo", "--budget-rate", "1.5"])
    assert over.exit_code == 2 and "at most 1" in over.output
    uneven = runner.invoke(app, ["hindsight", "--demo", "--level-block", "7m"])
    assert uneven.exit_code == 2 and "sample period" in plain(uneven.output)
    # the demo fleet's limits are not its requests: no memory bound for it
    assert runner.invoke(app, ["hindsight", "--demo", "--resource", "memory"]).exit_code == 2


@pytest.mark.parametrize("flag", ["--warm-up", "--split", "--level-block"])
def test_an_empty_duration_is_refused_not_the_default(flag: str) -> None:
    """`--split ""` and `--warm-up ""` silently meant their defaults."""
    result = runner.invoke(app, ["hindsight", "--demo", flag, ""])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {flag}: empty duration" in plain(result.output)


@pytest.mark.parametrize("cap", ["99999999999999", "9" * 400])
def test_a_huge_change_cap_is_no_cap_not_a_memory_error(cap: str) -> None:
    result = runner.invoke(app, ["hindsight", "--demo", "--changes-per-day", cap])
    assert result.exit_code == 0, result.output
    assert "cpu_relative_slack > 0.0000" in result.stdout  # every window may change


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--changes-per-day", "-1", "changes_per_day must be a finite number of at least 0"),
        ("--exempt-fraction", "nan", "exempt_fraction must be in [0, 0.5]"),
        ("--exempt-fraction", "0.6", "exempt_fraction must be in [0, 0.5]"),
    ],
)
def test_the_library_checks_the_limits_for_the_cli(flag: str, value: str, message: str) -> None:
    """One rule, in recommender.backtest.hindsight; the CLI names the flag."""
    result = runner.invoke(app, ["hindsight", "--demo", flag, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {flag}: {message}" in plain(result.output)


def test_the_level_reference_is_printed_for_cpu() -> None:
    args = ["hindsight", "--demo", "--budget-rate", "0.02", "--level-block", "4h"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    found = re.search(
        r"level-clairvoyant cpu_relative_slack = ([0-9.]+) at shortfall ([0-9.]+)", result.stdout
    )
    assert found is not None
    assert 0.0 < float(found.group(1)) < 1.0
    assert float(found.group(2)) <= 0.02
    best = re.search(
        r"best flat blocks: cpu_relative_slack > ([0-9.]+) \(certified; reached: ([0-9.]+) "
        r"at shortfall ([0-9.]+)",
        result.stdout,
    )
    assert best is not None
    # knowing every window of a block leaves no more than knowing its mean and spread
    assert float(best.group(1)) <= float(best.group(2))
    assert float(best.group(1)) <= float(found.group(1))
    assert float(best.group(3)) <= 0.02
    assert runner.invoke(app, [*args[:-1], "0h"]).exit_code == 2
    fed = runner.invoke(app, [*args, "--at-least-mean"])
    assert fed.exit_code == 0, fed.output
    assert fed.stdout.count("never below the block's mean") == 2
    fed_best = re.search(r"best flat blocks: cpu_relative_slack > ([0-9.]+)", fed.stdout)
    assert fed_best is not None
    # a floor on every request can only leave as much slack or more
    assert float(fed_best.group(1)) >= float(best.group(1)) - 1e-4


def test_the_memory_reference_limits_every_block_at_its_peak(tmp_path: Path) -> None:
    # 1 GiB throughout, and one window of each 4 h block (48 windows) at 2 GiB
    memory = np.where(np.arange(3 * PER_DAY) % 48 == 7, 2 * GIB, GIB)
    usage = write_usage(tmp_path, history(np.full(3 * PER_DAY, 0.5), memory))
    args = ["hindsight", "--input", str(usage), "--resource", "memory", "--level-block", "4h"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    found = re.search(r"peak-clairvoyant memory_relative_slack = ([0-9.]+)", result.stdout)
    assert found is not None
    assert float(found.group(1)) == pytest.approx(47 / 96, abs=1e-4)
    assert runner.invoke(app, [*args[:-1], "-4h"]).exit_code == 2


@pytest.mark.parametrize("resource", ["cpu", "memory"])
@pytest.mark.parametrize(
    ("rate", "message"),
    [
        ("inf", "a budget rate must be a finite number of at least 0, got inf"),
        ("nan", "a budget rate must be a finite number of at least 0, got nan"),
        ("-1", "a budget rate must be a finite number of at least 0, got -1.0"),
    ],
)
def test_a_budget_rate_that_is_no_number_of_kills_is_refused(
    tmp_path: Path, resource: str, rate: str, message: str
) -> None:
    """`--resource memory --budget-rate inf` printed a 'certified' bound of 0."""
    usage = write_usage(tmp_path, history(np.full(3 * PER_DAY, 0.5), np.full(3 * PER_DAY, GIB)))
    args = ["hindsight", "--input", str(usage), "--resource", resource, "--budget-rate", rate]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for --budget-rate: {message}" in plain(result.output)


def test_a_budget_rate_that_overflows_the_budget_is_refused(tmp_path: Path) -> None:
    usage = write_usage(tmp_path, history(np.full(3 * PER_DAY, 0.5), np.full(3 * PER_DAY, GIB)))
    args = ["hindsight", "--input", str(usage), "--resource", "memory", "--budget-rate", "1e308"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "a budget rate of 1e+308 is too large" in plain(result.output)


def test_the_trailing_peak_floor_and_its_forgetting_time(tmp_path: Path) -> None:
    # 1 GiB, and a 4 GiB job in the first window of every 6 h (72 windows)
    memory = np.where(np.arange(3 * PER_DAY) % 72 == 0, 4 * GIB, GIB)
    usage = write_usage(tmp_path, history(np.full(3 * PER_DAY, 0.5), memory))
    base = ["hindsight", "--input", str(usage), "--resource", "memory"]
    result = runner.invoke(app, [*base, "--peak-window", "1h", "--slack-goal", "0.5"])
    assert result.exit_code == 0, result.output
    found = re.search(r"memory_relative_slack > ([0-9.]+) \(certified, OOM kills", result.stdout)
    assert found is not None
    # each job's peak is held for 12 windows after it: 36 GiB-windows of slack per 6 h
    assert float(found.group(1)) == pytest.approx(36 / (4 + 12 * 4 + 59), abs=1e-4)
    # W windows of memory leave 3W / (75 + 3W) per 6 h: 0.5 at 25 windows, more at 26
    assert "forgets a peak within 125m (any longer" in result.stdout
    day = runner.invoke(app, [*base, "--peak-window", "1d"])
    assert day.exit_code == 0, day.output
    longer = re.search(r"memory_relative_slack > ([0-9.]+) \(certified, OOM", day.stdout)
    assert longer is not None and float(longer.group(1)) > float(found.group(1))
    lax = runner.invoke(app, [*base, "--slack-goal", "0.9"])
    assert lax.exit_code == 0, lax.output
    assert "is not ruled out even for a limit that never forgets" in lax.stdout


@pytest.mark.parametrize(
    ("args", "flag", "message"),
    [
        (["--peak-window", "1h"], "--peak-window", "only for --resource memory"),
        (["--slack-goal", "0.5"], "--slack-goal", "only for --resource memory"),
        (["--resource", "memory", "--slack-goal", "1.5"], "--slack-goal", "not within 0 to 1"),
        (["--resource", "memory", "--peak-window", "7m"], "--peak-window", "sample period"),
        (["--resource", "memory", "--peak-window", "-1h"], "--peak-window", ""),
    ],
)
def test_bad_peak_floor_flags_are_refused(
    tmp_path: Path, args: list[str], flag: str, message: str
) -> None:
    usage = write_usage(tmp_path, history(np.full(3 * PER_DAY, 0.5), np.full(3 * PER_DAY, GIB)))
    result = runner.invoke(app, ["hindsight", "--input", str(usage), *args])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {flag}" in plain(result.output)
    assert message in plain(result.output)
