"""`tailor recommend` and `tailor schedule` on a real cluster with only a kubeconfig: they
list the Deployment's pods, find Prometheus behind a Service and read it through the API
server's proxy.

The Prometheus is a real one holding a backfilled history; the Service has no selector
and an Endpoints object points at Prometheus' port. The API server's service proxy only
follows an address that is a pod's (its targetRef names a pod whose status holds the IP)
and refuses any address in the loopback range, so Prometheus listens on the machine's
own non-loopback address and a pod `prometheus-0` carries that address in its status,
as the kubelet would write it.
"""

from __future__ import annotations

import io
import json
import socket

import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from tailor.cli.main import app
from tests.cli_text import plain
from tests.cluster.controlplane import ControlPlane
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.rawapi import MERGE_PATCH, RawApi
from tests.cluster.workloads import daily_cycle

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus]

REPLICA_SET = "web-7f9c5d"  # Deployment web's ReplicaSet: <deployment>-<pod-template-hash>
PODS = (f"{REPLICA_SET}-abcde", f"{REPLICA_SET}-fghjk")


def two_pod_history(namespace: str) -> pd.DataFrame:
    first = daily_cycle(namespace, backfill_end(), days=3)
    second = first.copy()
    second["pod"] = PODS[1]
    first["pod"] = PODS[0]
    return pd.concat([first, second], ignore_index=True)


def deployment_pod(name: str) -> dict:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": REPLICA_SET,
        "uid": "00000000-0000-0000-0000-000000000001",
        "controller": True,
    }
    resources = {"requests": {"cpu": "500m", "memory": "256Mi"}}
    container = {"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}, "ownerReferences": [owner]},
        "spec": {"containers": [container]},
    }


def own_address() -> str:
    """The machine's address on its default route (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))
        address = str(probe.getsockname()[0])
    assert not address.startswith("127."), "the test needs a non-loopback IPv4 address"
    return address


def expose(api: RawApi, namespace: str, address: str, port: int) -> None:
    """prometheus-operated (the operator's Service name) -> pod prometheus-0 at address:port."""
    container = {"name": "prometheus", "image": "quay.io/prometheus/prometheus"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "prometheus-0", "labels": {"app": "prometheus"}},
        "spec": {"containers": [container]},
    }
    api.create(f"/api/v1/namespaces/{namespace}/pods", pod)
    status = {"status": {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}]}}
    api.patch(f"/api/v1/namespaces/{namespace}/pods/prometheus-0/status", status, MERGE_PATCH)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "prometheus-operated", "labels": {"operated-prometheus": "true"}},
        "spec": {"ports": [{"name": "web", "port": 9090, "targetPort": port}]},
    }
    api.create(f"/api/v1/namespaces/{namespace}/services", service)
    target = {"kind": "Pod", "name": "prometheus-0", "namespace": namespace}
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "prometheus-operated"},
        "subsets": [
            {
                "addresses": [{"ip": address, "targetRef": target}],
                "ports": [{"name": "web", "port": port}],
            }
        ],
    }
    api.create(f"/api/v1/namespaces/{namespace}/endpoints", endpoints)


def test_recommend_and_schedule_read_the_cluster_and_its_prometheus_with_a_kubeconfig(
    prometheus_server: PrometheusFactory,
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kube_namespace: str,
) -> None:
    for name in PODS:
        kube_api.create(f"/api/v1/namespaces/{kube_namespace}/pods", deployment_pod(name))
    address = own_address()
    history = usage_to_openmetrics(two_pod_history(kube_namespace))
    instance = prometheus_server.start(history, host=address)
    runner = CliRunner()
    base = ["recommend", "--kubeconfig", str(kube_cluster.kubeconfig), "-n", kube_namespace]

    missing = runner.invoke(app, [*base, "--format", "json"])
    assert missing.exit_code == 2
    said = plain(missing.output)
    assert "no Prometheus found in the cluster" in said
    for way in ("--prometheus URL", "--input FILE", "--demo"):
        assert way in said

    expose(kube_api, kube_namespace, address, int(instance.url.rsplit(":", 1)[1]))
    try:
        result = runner.invoke(app, [*base, "--format", "json", "--history", "4d"])
        assert result.exit_code == 0, result.output
        assert f"Service {kube_namespace}/prometheus-operated" in plain(result.stderr)
        [row] = json.loads(result.stdout)
        assert (row["namespace"], row["workload"], row["container"]) == (
            kube_namespace,
            "web",
            "app",
        )
        assert row["current"] == {"cpu": 0.5, "memory": 256 * 2**20}
        assert row["pods"] == 2
        assert row["cpu"]["target"] > 0.5  # the cycle peaks at 1.2 cores

        table = runner.invoke(app, [*base, "--history", "4d", "--cpu-price", "1"])
        assert table.exit_code == 0, table.output
        footer = table.stdout[table.stdout.index("cost / month") :]
        total = next(line for line in footer.splitlines() if line.strip().startswith("total"))
        cores = f"1 → {2 * row['cpu']['target']:.3g}"  # two pods of 500m now
        assert cores in total

        plan = runner.invoke(app, ["schedule", *base[1:], "--history", "4d", "--format", "csv"])
        assert plan.exit_code == 0, plan.output
        periods = pd.read_csv(io.StringIO(plan.stdout))
        assert len(periods) >= 24 and set(periods["workload"]) == {"web"}
        assert (periods["cpu_current"] == 0.5).all()
        assert (periods["memory_current"] == 256 * 2**20).all()
        change = periods["cpu_request"] - periods["cpu_current"]
        assert periods["cpu_change"].to_numpy() == pytest.approx(change.to_numpy())
        shown = runner.invoke(app, ["schedule", *base[1:], "--history", "4d"])
        assert shown.exit_code == 0, shown.output
        assert "500m → " in shown.stdout and "scheduled" in shown.stdout
    finally:
        kube_api.delete(f"/api/v1/namespaces/{kube_namespace}/services/prometheus-operated")
