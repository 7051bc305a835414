"""The forecaster fed by a real Prometheus: `tailor schedule` and `recommend --strategy forecast`.

Four days of history (a serving container with a daily cycle, a flat worker
killed at its memory limit six hours before the end) are backfilled with
promtool. What the CLI plans from Prometheus must equal what the library plans
from the frames that were written, and the plan must show what the history
holds: requests that follow the cycle, memory held above the limit of the kill.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.schema import validate_usage
from recommender.recommend import recommend_forecast_workloads
from tailor.cli.main import app
from tests.cluster.prometheus import backfill_end

pytestmark = pytest.mark.prometheus

STEP = 300
DAYS = 4
MIB = 2**20
LIMIT = 400 * MIB  # the worker's memory limit, where it was OOM-killed
KILL_BEFORE_END = 6 * 3600 - 17 * 60  # mid-block: a kill rounded to the grid holds as long
# The web container peaks this many hours after the history ends: the history must end
# near the wall clock (Prometheus keeps it), so a cycle fixed to UTC hours would put the
# peak, or the night after it, at the edge of the 24 h plan on some hours of the day.
PEAK_AFTER_END = 8


def _build(end: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(7)
    times = np.arange(end - DAYS * 86400, end, STEP)
    peak_hour = (end / 3600 + PEAK_AFTER_END) % 24
    hours = (times % 86400) / 3600
    cycle = np.clip(np.cos((hours - peak_hour) / 24 * 2 * np.pi), 0, None)
    web_cpu = np.clip(0.1 + 0.9 * cycle + rng.normal(0, 0.03, times.size), 0.01, None)
    worker_cpu = np.clip(0.4 + rng.normal(0, 0.02, times.size), 0.01, None)
    frames = [
        _frame(times, "web", "web-7f9c5d-abcde", "app", web_cpu, 500 * MIB, 1024 * MIB),
        _frame(times, "worker", "worker-0", "job", worker_cpu, 300 * MIB, LIMIT),
    ]
    for frame in frames:  # working sets wander a little
        frame["memory"] += rng.integers(0, 20 * MIB, len(frame)).astype(np.float64)
    events = pd.DataFrame(
        {
            "timestamp": pd.to_datetime([end - KILL_BEFORE_END], unit="s", utc=True),
            "namespace": ["shop"],
            "pod": ["worker-0"],
            "container": ["job"],
            "reason": ["OOMKilled"],
            "memory": [float(LIMIT)],
        }
    )
    return validate_usage(pd.concat(frames, ignore_index=True), "written history"), events


def _frame(
    times: np.ndarray,
    workload: str,
    pod: str,
    container: str,
    cpu: np.ndarray,
    memory: float,
    limit: float,
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp": pd.to_datetime(times, unit="s", utc=True),
            "namespace": "shop",
            "workload": workload,
            "pod": pod,
            "container": container,
            "cpu": cpu,
            "memory": memory,
            "cpu_request": 1.0,
            "memory_request": 256.0 * MIB,
            "cpu_limit": np.nan,
            "memory_limit": limit,
        }
    )


@pytest.fixture(scope="module")
def backfilled(prometheus_server) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    usage, events = _build(backfill_end())
    instance = prometheus_server.start(usage_to_openmetrics(usage, events))
    return instance.url, usage, events


def _cli(url: str, *command: str) -> list[dict[str, Any]]:
    args = [*command, "--prometheus", url, "--history", f"{DAYS + 1}d", "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records: list[dict[str, Any]] = json.loads(result.stdout)
    return records


def _untimed(text: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "<time>", text)


def test_schedule_from_prometheus_equals_the_library_on_the_written_history(
    backfilled: tuple[str, pd.DataFrame, pd.DataFrame],
) -> None:
    url, usage, events = backfilled
    rows = pd.DataFrame(_cli(url, "schedule"))
    _, expected = recommend_forecast_workloads(usage, events)
    assert len(rows) == len(expected) == 2 * 25  # the hour in force, then 24
    rows = rows.sort_values(["workload", "start"]).reset_index(drop=True)
    expected = expected.sort_values(["workload", "start"]).reset_index(drop=True)
    assert rows["workload"].tolist() == expected["workload"].tolist()
    assert (pd.to_datetime(rows["start"]) == expected["start"]).all()
    # cpu read back through rate() differs in the last bits: a millicore of rounding
    np.testing.assert_allclose(rows["cpu"], expected["cpu_request"], rtol=0, atol=0.0011)
    np.testing.assert_allclose(rows["memory"], expected["memory_request"], rtol=1e-9)
    np.testing.assert_allclose(rows["memoryLimit"], expected["memory_limit"], rtol=1e-9)


def test_schedule_from_prometheus_follows_the_cycle_and_holds_after_the_kill(
    backfilled: tuple[str, pd.DataFrame, pd.DataFrame],
) -> None:
    url, usage, _ = backfilled
    rows = pd.DataFrame(_cli(url, "schedule"))
    rows["start"] = pd.to_datetime(rows["start"])
    end = usage["timestamp"].max() + pd.Timedelta(seconds=STEP)
    # the schedule starts with the hour the last sample fell in, the plan where it ends
    assert rows["start"].min() == (end - pd.Timedelta(seconds=STEP)).floor("h")
    rows = rows[rows["start"] >= end]
    web = rows[rows["workload"] == "web"].set_index("start")["cpu"]
    peak = web[end + pd.Timedelta(hours=PEAK_AFTER_END)]
    night = web[end + pd.Timedelta(hours=PEAK_AFTER_END + 12)]
    assert peak >= 0.95  # covers the 1-core peak ...
    assert night < 0.5 * peak  # ... and comes down at night instead of holding it
    worker = rows[rows["workload"] == "worker"]
    hold_end = end - pd.Timedelta(seconds=KILL_BEFORE_END) + pd.Timedelta(hours=24)
    held = worker[worker["start"] + pd.Timedelta(hours=1) <= hold_end]
    assert len(held) == 18
    assert (held["memory"] > LIMIT).all()  # above the limit it was killed at, all through the hold
    after = worker[worker["start"] >= hold_end]
    peak_memory = usage.loc[usage["workload"] == "worker", "memory"].max()
    # past the hold the kill is still remembered, as upstream keeps its OOM sample:
    # the limit does not return to its own peaks, under the limit it was killed at
    assert len(after) == 5 and (after["memory"] >= held["memory"].min()).all()
    assert (after["memory"] > LIMIT).all() and (after["memory"] > peak_memory).all()
    assert (worker["cpu"] < 0.6).all()  # a flat 0.4-core worker is not sized like the web peak


def test_forecast_recommendation_from_prometheus_explains_itself(
    backfilled: tuple[str, pd.DataFrame, pd.DataFrame],
) -> None:
    url, usage, events = backfilled
    records = {r["workload"]: r for r in _cli(url, "recommend", "--strategy", "forecast")}
    expected, _ = recommend_forecast_workloads(usage, events)
    assert set(records) == set(expected["workload"]) == {"web", "worker"}
    for row in expected.itertuples():
        record = records[row.workload]
        assert record["cpu"]["target"] == pytest.approx(row.cpu_target, abs=0.0011)
        assert record["memory"]["target"] == pytest.approx(row.memory_target, rel=1e-9)
        # Prometheus shows the kill at the first grid point after it: only its time differs
        assert _untimed(record["explanation"]) == _untimed(str(row.explanation))
    assert "daily cycle" in records["web"]["explanation"]
    assert "no cycle" in records["worker"]["explanation"]
    kill = pd.Timestamp(events["timestamp"].iloc[0]).ceil(f"{STEP}s")
    assert f"1 OOM kill(s), last {kill:%Y-%m-%d %H:%M} UTC" in records["worker"]["explanation"]
    assert records["worker"]["memory"]["target"] > LIMIT
