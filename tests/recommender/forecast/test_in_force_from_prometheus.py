"""The schedule read from a real Prometheus starts from the requests in force.

Two days of a flat 0.3-core worker are backfilled with promtool, its CPU request
(kube-state-metrics) moved six times between 20 and 15 hours before the end: the
day's budget is spent. The schedule must hold the request in force until the first
of those changes leaves the day, then cut, and equal what the library plans from
the frame that was written.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.schema import validate_usage
from recommender.forecast.settings import ForecastSettings
from recommender.recommend import recommend_forecast_workloads
from tailor.cli.main import app
from tests.cluster.prometheus import backfill_end

pytestmark = pytest.mark.prometheus

STEP = 300
DAYS = 2
HOUR = 3600
MIB = 2**20


def _history(end: int) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    times = np.arange(end - DAYS * 86400, end, STEP)
    hours_before_end = (end - times) / HOUR
    request = np.ones(times.size)
    for k, hours in enumerate(range(20, 14, -1)):  # 6 resizes: 0.9, 1.0, 0.9, ...
        request[hours_before_end <= hours] = 0.9 if k % 2 == 0 else 1.0
    frame = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(times, unit="s", utc=True),
            "namespace": "shop",
            "workload": "worker",
            "pod": "worker-0",
            "container": "job",
            "cpu": np.clip(0.3 + rng.normal(0, 0.01, times.size), 0.01, None),
            "memory": 200.0 * MIB,
            "cpu_request": request,
            "memory_request": 256.0 * MIB,
            "cpu_limit": np.nan,
            "memory_limit": 256.0 * MIB,
        }
    )
    return validate_usage(frame, "written history")


def test_a_spent_budget_read_from_prometheus_holds_the_request_in_force(
    prometheus_server,
) -> None:
    end = backfill_end()
    usage = _history(end)
    assert usage["cpu_request"].iloc[-1] == 1.0
    url = prometheus_server.start(usage_to_openmetrics(usage, None)).url
    args = ["schedule", "--prometheus", url, "--history", f"{DAYS + 1}d", "--format", "json"]
    args += ["--changes-per-day", "6"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = pd.DataFrame(json.loads(result.stdout))
    rows["start"] = pd.to_datetime(rows["start"])
    hours_after_end = (rows["start"] - pd.Timestamp(end, unit="s", tz="UTC")) / pd.Timedelta(
        hours=1
    )
    cpu = rows.set_index(hours_after_end)["cpu"]
    # the six changes leave the day 4 to 9 h after the end; a cut needs two left (one
    # is kept for a reaction): the request in force holds until then, then comes down
    assert (cpu[cpu.index < 5] == 1.0).all()
    assert cpu[cpu.index >= 5].min() < 0.6
    _, expected = recommend_forecast_workloads(usage, settings=ForecastSettings().with_budget(6))
    np.testing.assert_allclose(rows["cpu"], expected["cpu_request"], rtol=0, atol=0.0011)
