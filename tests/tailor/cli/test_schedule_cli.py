"""`tailor schedule` and `tailor recommend --strategy forecast` through the real entry point."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.files import write_usage
from recommender.data.schema import validate_usage
from recommender.recommend import recommend_forecast_workloads
from tailor.cli.main import app
from tailor.cli.schedule import schedule_steps
from tailor.schedule_file import MAX_AMOUNT, parse_schedule
from tests.cli_text import plain

runner = CliRunner()


def _two_pod_daily_service(days: int = 8) -> pd.DataFrame:
    """Two pods of one deployment with a strong daily cycle; pod b runs 2x hotter."""
    minutes = np.arange(0, days * 1440, 5)
    start = pd.Timestamp("2024-05-06", tz="UTC")
    wave = 0.2 + 0.8 * np.clip(np.sin((minutes % 1440) / 1440 * 2 * np.pi - np.pi / 2), 0, None)
    frames = []
    for pod, scale in (("web-a", 1.0), ("web-b", 2.0)):
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": start + pd.to_timedelta(minutes, unit="min"),
                    "namespace": "shop",
                    "workload": "web",
                    "pod": pod,
                    "container": "app",
                    "cpu": wave * scale,
                    "memory": 400e6 + 0 * minutes,
                }
            )
        )
    return validate_usage(pd.concat(frames, ignore_index=True))


def test_schedule_json_covers_the_next_day_per_workload(tmp_path: Path) -> None:
    source = tmp_path / "usage.parquet"
    write_usage(_two_pod_daily_service(), source)
    result = runner.invoke(app, ["schedule", "--input", str(source), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    # One workload container: the hour in force, then 24 hourly periods (the default).
    assert len(rows) == 25
    assert {(r["namespace"], r["workload"], r["container"]) for r in rows} == {
        ("shop", "web", "app")
    }
    starts = pd.to_datetime([r["start"] for r in rows])
    assert (starts[1:] - starts[:-1] == pd.Timedelta(hours=1)).all()
    # the hour the history's last sample (23:55) fell in, then the next day
    assert starts[0] == pd.Timestamp("2024-05-13 23:00", tz="UTC")
    assert starts[1] == pd.Timestamp("2024-05-14", tz="UTC")
    cpu = np.array([r["cpu"] for r in rows])
    # Following the cycle: the night requests sit well below the afternoon peak ...
    assert cpu.min() < 0.7 * cpu.max()
    # ... and the hot pod (2 cores at peak) is what the workload's requests must cover.
    assert cpu.max() >= 1.9
    assert all(r["memory"] >= 400e6 for r in rows)
    assert all(r["memoryLimit"] >= r["memory"] for r in rows)


def test_forecast_recommendation_is_a_vpa_shaped_drop_in() -> None:
    result = runner.invoke(
        app, ["recommend", "--demo", "--strategy", "forecast", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert len(records) == 7
    for record in records:
        for resource in ("cpu", "memory"):
            bounds = record[resource]
            assert bounds["lowerBound"] <= bounds["target"] <= bounds["upperBound"]
        millicores = record["cpu"]["target"] * 1000
        assert millicores == pytest.approx(round(millicores), abs=1e-6)  # whole millicores
        assert record["explanation"].startswith("cpu:")


def test_schedule_table_and_csv(tmp_path: Path) -> None:
    table = runner.invoke(app, ["schedule", "--demo"])
    assert table.exit_code == 0, table.output
    assert "schedule" in table.stdout
    target = tmp_path / "schedule.csv"
    result = runner.invoke(app, ["schedule", "--demo", "--format", "csv", "-o", str(target)])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(target)
    assert {"start", "end", "cpu_request", "memory_request"} <= set(frame.columns)
    assert len(frame) == 7 * 25


def test_schedule_bad_input_exits_non_zero() -> None:
    result = runner.invoke(app, ["schedule", "--input", "missing.parquet"])
    assert result.exit_code == 2
    assert "missing.parquet" in result.output


def test_forecast_settings_change_the_schedule_and_bad_ones_are_refused() -> None:
    def cpu(*extra: str) -> np.ndarray:
        result = runner.invoke(app, ["schedule", "--demo", "--format", "json", *extra])
        assert result.exit_code == 0, result.output
        return np.array([row["cpu"] for row in json.loads(result.stdout)])

    # a fleet target of 20 % shortfall needs far less margin than the default
    assert (
        cpu(
            "--forecast-set",
            "cpu_shortfall_mode=fixed",
            "--forecast-set",
            "target_cpu_shortfall=0.2",
            "--forecast-set",
            "max_container_shortfall=0.3",
        ).sum()
        < 0.95 * cpu().sum()
    )
    bad = runner.invoke(app, ["schedule", "--demo", "--forecast-set", "horizon_seconds=60"])
    assert bad.exit_code == 2 and "horizon_seconds" in bad.output
    vpa = runner.invoke(
        app, ["recommend", "--demo", "--forecast-set", "reactions.react_margin=0.2"]
    )
    assert vpa.exit_code == 2 and "--strategy forecast" in vpa.output


def _single_sample() -> pd.DataFrame:
    return validate_usage(
        pd.DataFrame(
            {
                "timestamp": [pd.Timestamp("2024-05-06 12:00", tz="UTC")],
                "namespace": ["shop"],
                "workload": ["web"],
                "pod": ["web-a"],
                "container": ["app"],
                "cpu": [0.3],
                "memory": [400e6],
            }
        )
    )


@pytest.mark.parametrize("command", [["schedule"], ["recommend", "--strategy", "forecast"]])
def test_a_history_without_a_sample_period_is_a_clear_error(
    tmp_path: Path, command: list[str]
) -> None:
    source = tmp_path / "usage.parquet"
    write_usage(_single_sample(), source)
    target = tmp_path / "out.json"
    args = [*command, "--input", str(source), "--format", "json", "-o", str(target)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "two samples" in result.output
    assert not target.exists()


def test_a_known_step_lets_one_sample_be_planned() -> None:
    """Prometheus knows its step: a pod scraped once still gets the cautious fallback."""
    recommendations, schedule = recommend_forecast_workloads(_single_sample(), step=300)
    assert len(schedule) == 25
    # the hour in force when the history ends (12:05), then the next boundary's
    assert schedule["start"].iloc[0] == pd.Timestamp("2024-05-06 12:00", tz="UTC")
    assert schedule["start"].iloc[1] == pd.Timestamp("2024-05-06 13:00", tz="UTC")
    assert (schedule["cpu_request"] >= 0.3).all()
    assert (schedule["memory_request"] >= 400e6).all()
    assert "too little history" in recommendations["explanation"].iloc[0]


def _strict_json(text: str) -> object:
    """Parse as strict JSON: a bare NaN or Infinity is an error, as in most clients."""

    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_a_cpu_only_series_has_no_memory_recommendation_in_every_format(tmp_path: Path) -> None:
    usage = _two_pod_daily_service(days=3)
    usage["memory"] = np.nan  # CPU-only data, as in the Azure trace
    source = tmp_path / "usage.parquet"
    write_usage(usage, source)

    table = runner.invoke(app, ["recommend", "--input", str(source), "--strategy", "forecast"])
    assert table.exit_code == 0, table.output
    assert "n/a" in table.output

    rows = _strict_json(
        runner.invoke(
            app, ["recommend", "--input", str(source), "--strategy", "forecast", "--format", "json"]
        ).output
    )
    assert isinstance(rows, list) and len(rows) == 1
    assert rows[0]["memory"] == {"target": None, "lowerBound": None, "upperBound": None}
    assert rows[0]["cpu"]["target"] > 0

    periods = _strict_json(
        runner.invoke(app, ["schedule", "--input", str(source), "--format", "json"]).output
    )
    assert isinstance(periods, list) and len(periods) == 25
    assert all(p["memory"] is None and p["memoryLimit"] is None for p in periods)
    assert all(p["cpu"] > 0 for p in periods)

    shown = runner.invoke(app, ["schedule", "--input", str(source)])
    assert shown.exit_code == 0, shown.output
    assert "n/a" in shown.output


@pytest.mark.parametrize("command", [["schedule"], ["recommend", "--strategy", "forecast"]])
def test_an_update_period_off_the_data_grid_is_refused(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--demo", "--forecast-set", "update_period_seconds=420"])
    assert result.exit_code == 2
    assert "whole number of the data's 300 s" in plain(result.output)


@pytest.mark.parametrize("command", [["schedule"], ["recommend", "--strategy", "forecast"]])
def test_a_sample_period_the_default_period_cannot_hold_blames_the_input(
    tmp_path: Path, command: list[str]
) -> None:
    """Samples 2 h 5 min apart: the error used to name --forecast-set, which was not given."""
    usage = _single_sample()
    later = usage.assign(timestamp=usage["timestamp"] + pd.Timedelta(minutes=125))
    source = tmp_path / "usage.csv"
    write_usage(pd.concat([usage, later], ignore_index=True), source)
    result = runner.invoke(app, [*command, "--input", str(source)])
    text = plain(result.output)
    assert result.exit_code == 2
    assert "Invalid value for --input" in text and "--forecast-set" not in text
    assert "data's 7500 s sample period" in text


@pytest.mark.parametrize("command", [["schedule"], ["recommend", "--strategy", "forecast"]])
def test_a_usage_no_quantity_can_hold_is_refused(tmp_path: Path, command: list[str]) -> None:
    """cpu 1e308 overflowed to inf and the JSON writer crashed with a traceback."""
    usage = _two_pod_daily_service(days=1)
    source = tmp_path / "usage.csv"
    write_usage(usage, source)
    text = source.read_text().splitlines()
    cells = text[5].split(",")
    cells[5] = "1e308"  # the cpu column
    source.write_text("\n".join([*text[:5], ",".join(cells), *text[6:]]) + "\n")
    target = tmp_path / "out.json"
    result = runner.invoke(
        app, [*command, "--input", str(source), "--format", "json", "-o", str(target)]
    )
    assert result.exit_code == 2, result.output
    assert "row 5, column 'cpu': 1e+308 cores is more than a Kubernetes quantity" in plain(
        result.output
    )
    assert not target.exists()


def test_the_schedule_table_shows_each_step_once() -> None:
    """People read the step function: a row per run of equal requests, from its first
    period's start to its last period's end; JSON keeps one row per period."""
    periods = json.loads(runner.invoke(app, ["schedule", "--demo", "--format", "json"]).stdout)
    frame = pd.DataFrame(periods).rename(columns={"cpu": "cpu_request", "memory": "memory_request"})
    frame["start"], frame["end"] = pd.to_datetime(frame["start"]), pd.to_datetime(frame["end"])
    steps = schedule_steps(frame)
    for _, container in steps.groupby(["namespace", "workload", "container"]):
        # contiguous, the hour in force and the whole day; no two neighbours alike
        starts, ends = container["start"].to_numpy(), container["end"].to_numpy()
        assert (starts[1:] == ends[:-1]).all()
        assert container["end"].iloc[-1] - container["start"].iloc[0] == pd.Timedelta(hours=25)
        values = container[["cpu_request", "memory_request"]].to_numpy()
        assert (np.abs(np.diff(values, axis=0)).sum(axis=1) > 0).all()
    assert len(steps) < len(frame) / 3
    table = runner.invoke(app, ["schedule", "--demo", "--no-summary"]).stdout
    body = [line for line in table.splitlines() if re.search(r" \d\d-\d\d \d\d:\d\d ", line)]
    assert len(body) == len(steps)


def test_usage_near_a_quantitys_maximum_plans_a_schedule_follow_reads(tmp_path: Path) -> None:
    """The margin on 8e18 bytes went past what `tailor follow` writes back: the schedule
    was written, then refused whole by follow."""
    usage = _two_pod_daily_service(days=2)
    usage["memory"] = 8.0e18
    usage["cpu"] = usage["cpu"] * 1e15
    source, target = tmp_path / "usage.csv", tmp_path / "plan.json"
    write_usage(usage, source)
    result = runner.invoke(app, ["schedule", "--input", str(source), "-o", str(target)])
    assert result.exit_code == 0, result.output
    rows = parse_schedule(target.read_text(), str(target))
    assert rows and all(r.memory is not None and r.memory <= MAX_AMOUNT for r in rows)
