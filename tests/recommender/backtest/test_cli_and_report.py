"""`tailor backtest` end to end on small inputs, and the HTML report."""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from recommender.backtest import (
    ExecutionSettings,
    prepare_history,
    resolve_strategies,
    run_backtest,
)
from recommender.data.synthetic import demo_fleet
from tailor.cli.backtest import backtest_command
from tests.cli_text import plain
from tests.recommender.backtest.helpers import PER_DAY, history, write_usage

app = typer.Typer()
app.command("backtest")(backtest_command)
app.command("noop")(lambda: None)  # two commands: the first argument names the command


def invoke(*args: str) -> tuple[int, str]:
    outcome = CliRunner().invoke(app, ["backtest", *args])
    return outcome.exit_code, outcome.output


def test_json_output_and_per_container_file(tmp_path: Path) -> None:
    usage = write_usage(tmp_path, history(np.tile(np.full(2 * PER_DAY, 0.5), (2, 1))))
    per_container = tmp_path / "per.csv"
    code, output = invoke(
        "--input",
        str(usage),
        "--strategies",
        "krr,oracle",
        "--format",
        "json",
        "--workers",
        "1",
        "--no-progress",
        "--per-container",
        str(per_container),
    )
    assert code == 0, output
    document = json.loads(output)
    assert document["containers"] == 2
    assert set(document["strategies"]) == {"krr", "oracle"}
    detail = pd.read_csv(per_container)
    assert len(detail) == 4 and {"strategy", "pod", "cpu_relative_slack"} <= set(detail.columns)


def test_table_shows_metrics_and_ratios_to_vpa(tmp_path: Path) -> None:
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    out = tmp_path / "table.txt"
    code, output = invoke(
        "--input",
        str(usage),
        "--strategies",
        "vpa,oracle",
        "--workers",
        "1",
        "--no-progress",
        "--output",
        str(out),
    )
    assert code == 0, output
    text = out.read_text()
    assert "cpu_relative_slack" in text and "0.00x" in text
    assert "autopilot_memory_relative_slack" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategies", "nope"], "unknown strategy"),
        (["--strategies", ":make"], "':make': name it as module.path:function"),
        (["--strategies", "x=.relative:make"], "name it as module.path:function"),
        (["--strategies", "os:"], "name it as module.path:function"),
        (
            ["--strategies", "vpa=tests.recommender.backtest.helpers:make_fixed"],
            "an imported strategy cannot take the built-in name vpa",
        ),
        (["--warm-up", "forever"], "duration"),
        (["--warm-up", "1e308"], "invalid duration '1e308'"),
        (["--warm-up", "99999999999999w"], "invalid duration '99999999999999w': too long"),
        (["--split", "inf"], "invalid duration 'inf'"),
        (["--warm-up", "30d"], "a warm-up of 30d leaves no window"),
        (
            ["--split", "40d"],
            "--split: a piece of 40d warms up for a quarter of it (10d) by default, which leaves "
            "no window to evaluate: the longest series spans 48.0 h; choose a shorter --split",
        ),
        (["--split", "7m"], "split span (420 s) must be a whole number of the data's 300 s"),
        # these said "a single timestamp" / "must be a positive duration" / meant the default
        (["--split", "5m"], "(300 s) must hold at least two samples of the data's 300 s"),
        (["--split", "1ms"], "--split: '1ms' is below one second"),
        (["--split", "1500ms"], "--split: '1500ms' is not a whole number of seconds"),
        (["--split", ""], "--split: empty duration"),
        (["--warm-up", ""], "--warm-up: empty duration"),
        (["--months", "2013-9"], "--months goes with --dataset bitbrains"),
        (["--scheduler", "tcp://x:1"], "needs the dask engine"),
        (
            ["--engine", "dask", "--scheduler", "no-port"],
            "cannot reach the dask scheduler at no-port: missing port number",
        ),
        (["--forecast-set", "max_changes_per_day=3"], "the forecast strategy is not run"),
        (["--strategies", "forecast", "--forecast-set", "cap=3"], "unknown forecast setting"),
        (
            ["--strategies", "forecast-perfect", "--forecast-set", "update_period_seconds=420"],
            "whole number of the data's 300 s sample period",
        ),
        (["--strategies", "vpa", "--baseline-set", "autopilot:cpu_margin=0"], "is not run"),
        (["--strategies", "krr", "--baseline-set", "krr:cpu_percentil=0.9"], "unknown krr"),
        (["--strategies", "krr", "--baseline-set", "krr:cpu_percentile=2"], "cpu_percentile must"),
        (["--strategies", "krr", "--baseline-set", "cpu_percentile=0.9"], "STRATEGY:NAME=VALUE"),
        (["--strategies", "krr", "--baseline-set", "krr:memory_buffer=inf"], "a finite number"),
        (["--strategies", "krr", "--baseline-set", "krr:floor.cpu=-inf"], "a finite number"),
        (
            ["--strategies", "krr", "--baseline-set", "krr:memory_buffer=1e308"],
            "strategy 'krr' requested an infinite amount with the settings given",
        ),
        (
            ["--strategies", "krr", "--baseline-set", "krr:update_period_seconds=420"],
            "strategy 'krr': update_period_seconds (420 s) must be a whole number of the data's",
        ),
        (
            ["--strategies", "autopilot", "--baseline-set", "autopilot:max_over_seconds=1"],
            "max_over_seconds (1 s) must be a whole number of the data's 300 s sample period",
        ),
        (
            ["--strategies", "krr", "--baseline-set", "krr:history_seconds=3" + "0" * 30],
            "strategy 'krr': failed in the replay with the settings given: ValueError",
        ),
        (
            ["--strategies", "forecast", "--forecast-set", "memory.memory_peak_days=1e308"],
            "memory_peak_days must span at most 366 days",  # was an OverflowError in the replay
        ),
        (
            ["--strategies", "forecast", "--forecast-set", "history_days=1000000000"],
            "history_days must be in [1, 366]",  # was an OverflowError or a MemoryError
        ),
    ],
)
def test_bad_options_get_clear_errors(tmp_path: Path, args: list[str], message: str) -> None:
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    code, output = invoke("--input", str(usage), "--no-progress", *args)
    assert code == 2, output  # a usage error, not a traceback
    assert message in plain(output)


@pytest.mark.parametrize(
    ("flag", "name", "message"),
    [
        ("--output", "missing/result.json", "does not exist"),
        ("--report", "missing/report.html", "does not exist"),
        ("--per-container", "missing/per.csv", "does not exist"),
        ("--per-container", "per.txt", ".csv, .parquet, .json"),
        ("--output", ".", "is a folder"),
    ],
)
def test_an_unwritable_output_is_refused_before_the_replay(
    tmp_path: Path, flag: str, name: str, message: str
) -> None:
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    target = tmp_path / name
    code, output = invoke("--input", str(usage), "--no-progress", flag, str(target))
    assert code == 2
    assert message in plain(output)
    assert not target.exists() or target.is_dir()
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize(
    ("months", "message"),
    [
        ("", "name at least one month"),
        (" , ", "name at least one month"),
        ("2013-7,2013-7", "2013-7 is named twice"),
        ("../bitbrains-rnd/2013-7", "is not a month such as 2013-9"),
        ("2013-7 2013-8", "is not a month such as 2013-9"),
    ],
)
def test_bad_months_are_refused_before_the_dataset_is_read(
    tmp_path: Path, months: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBE_TAILOR_DATA", str(tmp_path))  # no trace is read
    code, output = invoke("--dataset", "bitbrains", "--months", months, "--no-progress")
    assert code == 2, output
    assert message in plain(output)


def test_two_outputs_naming_one_file_are_refused(tmp_path: Path) -> None:
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    target = tmp_path / "result.json"
    same = tmp_path / "." / "result.json"
    code, output = invoke(
        "--input", str(usage), "--no-progress", "--format", "json", "--strategies", "vpa",
        "--output", str(target), "--per-container", str(same),
    )  # fmt: skip
    assert code == 2, output
    assert "--output and --per-container both name" in plain(output)
    assert not target.exists()


def test_a_default_warm_up_longer_than_the_history_is_named_as_the_default(
    tmp_path: Path,
) -> None:
    usage = write_usage(tmp_path, history(np.full(PER_DAY // 2, 0.5)))
    code, output = invoke("--input", str(usage), "--no-progress")
    assert code == 2, output
    assert "the default warm-up of 1d leaves no window to evaluate: the longest series spans " \
        "12.0 h; choose a shorter one with --warm-up" in plain(output)  # fmt: skip


def test_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    code, output = invoke("--input", str(path), "--no-progress")
    assert code != 0 and "Traceback" not in output


def test_report_is_one_readable_html_file(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from recommender.backtest.report import write_report

    usage, events = demo_fleet(days=3)
    history_ = prepare_history(usage, events)
    specs = resolve_strategies("vpa,krr,oracle")
    result = run_backtest(history_, strategies=specs, execution=ExecutionSettings(workers=1))
    path = write_report(tmp_path / "report.html", history_, result, specs, notes=["demo"])
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "</html>" in text
    assert 'src="http' not in text  # self-contained
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(images) >= 5  # trade-off, changes, three containers
    assert all(base64.b64decode(image)[:8] == b"\x89PNG\r\n\x1a\n" for image in images)
    for name in ("vpa", "krr", "oracle", "memory_relative_slack", "0.00x vpa"):
        assert name in text


@pytest.mark.parametrize("fails", ["import", "drawing"])
def test_a_report_that_cannot_be_drawn_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    """Without matplotlib, --output and --per-container were written, then a traceback."""
    from recommender.backtest import report
    from recommender.plots import canvas

    if fails == "import":
        monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
        monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    else:  # importable, but the drawing itself fails after the replay

        def broken(width: float, height: float) -> None:
            raise report.ReportUnavailableError("no canvas")

        monkeypatch.setattr(canvas, "new_figure", broken)
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    written = [tmp_path / "out.json", tmp_path / "per.csv", tmp_path / "report.html"]
    code, output = invoke(
        "--input", str(usage), "--no-progress", "--strategies", "krr", "--workers", "1",
        "--format", "json", "--output", str(written[0]), "--per-container", str(written[1]),
        "--report", str(written[2]),
    )  # fmt: skip
    assert code == 2, output
    message = "needs matplotlib: pip install matplotlib" if fails == "import" else "no canvas"
    assert "Invalid value for --report" in plain(output) and message in plain(output)
    assert not any(path.exists() for path in written)


def test_split_replays_each_day_as_a_cold_start(tmp_path: Path) -> None:
    usage = write_usage(tmp_path, history(np.full((2, 3 * PER_DAY), 0.5)))
    out = tmp_path / "result.json"
    code, output = invoke(
        "--input",
        str(usage),
        "--split",
        "1d",
        "--strategies",
        "vpa",
        "--no-progress",
        "--format",
        "json",
        "--output",
        str(out),
    )
    assert code == 0, output
    result = json.loads(out.read_text())
    assert result["containers"] == 6  # 2 series x 3 days
    assert result["container_days"] == pytest.approx(6 * 0.75)  # warm-up: a quarter piece
    code, output = invoke("--input", str(usage), "--split", "0h", "--no-progress")
    assert code != 0 and "positive" in output


def test_forecast_settings_reach_the_replayed_strategy() -> None:
    def p99(*extra: str) -> float:
        code, output = invoke(
            "--demo", "--strategies", "forecast", "--format", "json", "--no-progress", *extra
        )
        assert code == 0, output
        return json.loads(output)["strategies"]["forecast"]["changes_per_container_day_p99"]

    assert p99() > 3  # the demo fleet's busiest day takes more changes than ...
    assert p99("--forecast-set", "max_changes_per_day=3") <= 3  # ... a cap of 3 allows


def test_baseline_settings_reach_the_replayed_baselines() -> None:
    def run(*extra: str) -> dict[str, dict[str, float]]:
        code, output = invoke(
            "--demo", "--strategies", "krr,autopilot", "--format", "json", "--no-progress", *extra
        )
        assert code == 0, output
        return dict(json.loads(output)["strategies"])

    free = run()
    held = run(
        "--baseline-set",
        "autopilot:policy.max_changes_per_day=2",
        "--baseline-set",
        "krr:cpu_percentile=0.99",
    )
    assert free["autopilot"]["changes_per_container_day_p99"] > 2
    assert held["autopilot"]["changes_per_container_day_p99"] <= 2
    assert held["krr"]["cpu_core_hours_requested"] > free["krr"]["cpu_core_hours_requested"]


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("make_not_a_strategy", "without reset, observe, observe_oom, decide"),
        ("make_failing_factory", "its factory failed: RuntimeError: no model file"),
        ("make_crashing", "failed in the replay: ValueError: requests of the wrong shape"),
        # SystemExit ended the run with status 0 and no output
        ("make_exiting_factory", "strategy 'x': its factory failed: SystemExit: 0"),
        ("make_exiting", "strategy 'x': failed in the replay: SystemExit: 0"),
        # negative requests made negative core-hours
        ("make_negative", "strategy 'x' requested a negative amount"),
    ],
)
def test_a_broken_imported_strategy_is_named_not_a_traceback(
    tmp_path: Path, factory: str, message: str, workers: str
) -> None:
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    name = f"x=tests.recommender.backtest.helpers:{factory}"  # vpa and x: a pool of 2 runs both
    args = ["--input", str(usage), "--no-progress", "--workers", workers]
    code, output = invoke(*args, "--strategies", f"vpa,{name}")
    assert code == 2, output
    assert message in plain(output)
    assert "Traceback" not in output
