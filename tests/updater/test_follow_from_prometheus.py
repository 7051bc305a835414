"""End to end: usage history in a real Prometheus -> `tailor schedule` -> `tailor follow`.

A serving container's four days with a daily cycle are backfilled with promtool;
the forecaster's plan for the period in force is then applied to a running pod of
the same workload through `pods/resize`, and the kubelet reports it applied.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from tailor.cli.main import app
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.podtools import applied_requests, pod_manifest, wait_for_pod
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.rawapi import RawApi
from tests.cluster.workloads import daily_cycle
from tests.updater.following import follow, start

pytestmark = pytest.mark.prometheus

DAYS = 4


def test_the_forecast_for_the_period_in_force_is_applied_in_place(
    prometheus_server: PrometheusFactory,
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    end = backfill_end()
    # the peak a fixed 8 h after the history's end: with it at a fixed hour of the day,
    # a plan made 1-3 h before the peak spends its changes on the ramp and, by the
    # change caps, holds through the night, so the test passed or failed by the clock
    peak_hour = (end / 3600 + 8) % 24
    instance = prometheus_server.start(
        usage_to_openmetrics(daily_cycle(kube_namespace, end, DAYS, peak_hour=peak_hour))
    )
    schedule = tmp_path / "schedule.json"
    args = ["schedule", "--prometheus", instance.url, "--history", f"{DAYS + 1}d"]
    result = CliRunner().invoke(app, [*args, "--format", "json", "--output", str(schedule)])
    assert result.exit_code == 0, result.output
    rows = json.loads(schedule.read_text())
    assert {(r["namespace"], r["workload"], r["container"]) for r in rows} == {
        (kube_namespace, "web", "app")
    }
    moment = datetime.now(UTC)
    [due] = [r for r in rows if r["start"] <= moment.isoformat().replace("+00:00", "Z") < r["end"]]
    cpus = {r["cpu"] for r in rows}
    assert max(cpus) > 2 * min(cpus)  # the plan follows the cycle, not one flat request

    node = f"e2e-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="8", memory="16Gi")
    manifest = pod_manifest(
        "web", node=node, requests={"cpu": "1", "memory": "512Mi"}, limits={"memory": "1Gi"}
    )
    start(kube_api, kube_namespace, manifest)
    [outcome] = follow(kube_cluster, schedule, "--at", moment.isoformat())
    assert (outcome["action"], outcome["applied"]) == ("resize", True)

    millicores = max(1, math.ceil(due["cpu"] * 1000 - 1e-9))
    wanted = f"{millicores // 1000}" if millicores % 1000 == 0 else f"{millicores}m"
    pod = wait_for_pod(
        kube_api,
        kube_namespace,
        "web",
        lambda p: applied_requests(p)["cpu"] == wanted,
        what="the period's CPU applied",
    )
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    assert int(requests["memory"]) == math.ceil(due["memory"])
