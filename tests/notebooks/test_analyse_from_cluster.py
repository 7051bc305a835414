"""The recommendations notebook on a real cluster and a real Prometheus: with the kube
context (pods' requests, Prometheus found behind a Service) its rows are the CLI's for the
same source; with a Prometheus URL (its reading cells run again in the same kernel), the
same targets over the history's own requests."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from tailor.cli.main import app
from tests.cluster.controlplane import ControlPlane
from tests.cluster.prometheus import PrometheusFactory
from tests.cluster.rawapi import RawApi
from tests.notebooks.running import HANG_GUARD, execute, images, rerun, tagged
from tests.tailor.cli.test_recommend_cluster import (
    PODS,
    deployment_pod,
    expose,
    own_address,
    two_pod_history,
)

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus, HANG_GUARD]

ROWS = """
import json
rows = analysis.side_by_side(recommendations)
print(json.dumps(rows.astype(object).where(rows.notna(), None).to_dict(orient="records")))
"""


def test_the_notebook_reads_the_kube_context_and_a_prometheus_url(
    prometheus_server: PrometheusFactory,
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kube_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in PODS:
        kube_api.create(f"/api/v1/namespaces/{kube_namespace}/pods", deployment_pod(name))
    address = own_address()
    instance = prometheus_server.start(
        usage_to_openmetrics(two_pod_history(kube_namespace)), host=address
    )
    expose(kube_api, kube_namespace, address, int(instance.url.rsplit(":", 1)[1]))
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))  # the kernel's context
    scope = f'NAMESPACES = ["{kube_namespace}"]\nHISTORY = "4d"\nWHAT_IF = False\n'
    url = f'PROMETHEUS_URL = "{instance.url}"\n{scope}'
    try:  # one kernel: the whole notebook on the kube context, then its reading cells on the URL
        notebook, (rows, by_url) = execute(
            "analyse_recommendations.ipynb",
            ROWS,
            rerun("analyse_recommendations.ipynb", url, through="load") + ROWS,
            parameters=f"FROM_CLUSTER = True\n{scope}",
        )
        cli = CliRunner().invoke(
            app,
            ["recommend", "--kubeconfig", str(kube_cluster.kubeconfig), "-n", kube_namespace,
             "--history", "4d", "--format", "json"],
        )  # fmt: skip
    finally:
        kube_api.delete(f"/api/v1/namespaces/{kube_namespace}/services/prometheus-operated")
    assert cli.exit_code == 0, cli.output
    [expected] = json.loads(cli.stdout)
    [row] = rows  # one workload container: web/app, two pods
    assert (row["namespace"], row["workload"], row["pods"]) == (kube_namespace, "web", 2)
    assert row["cpu_current"] == expected["current"]["cpu"] == 0.5
    assert row["cpu_target_vpa"] == pytest.approx(expected["cpu"]["target"])
    assert row["cpu_target_forecast"] > 0
    assert images(tagged(notebook, "workloads")) >= 1

    [row] = by_url  # the same history through the URL: its requests are kube-state-metrics'
    recorded = two_pod_history(kube_namespace)["cpu_request"].iloc[-1]
    assert row["workload"] == "web" and row["cpu_current"] == pytest.approx(recorded)
    assert row["cpu_target_vpa"] == pytest.approx(expected["cpu"]["target"])
