"""A DaemonSet recommended, resized and admitted per node group (real API server, kubelet
simulator, Prometheus).

Two simulated nodes of two instance types run a DaemonSet whose agent uses 0.3 cores
on the small one and 1.5 on the big one. One recommender pass (as its shipped
ServiceAccount) writes each group's figures into the VPA's annotation, next to the
status recommendation of both together; one updater pass resizes each pod in place to
its own group's target; and a pod the DaemonSet controller re-creates is sized by the
webhook from its node group (the node named in its node affinity, before binding).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.schema import validate_usage
from tailor.cli.main import app
from tailor.node_groups import DEFAULT_NODE_LABEL, GROUPS_ANNOTATION, GroupRecommendations
from tailor.quantity import Quantity
from tests.admission.cluster import registered, webhook
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.rbac import apply_manifest, kubeconfig_for
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import Mi, running_pods, vpa, vpa_collection, wait_for_running

pytestmark = pytest.mark.prometheus
SMALL, BIG = "t3.small", "m5.8xlarge"
USE = {SMALL: (0.3, 300 * Mi), BIG: (1.5, 1200 * Mi)}  # cores, bytes


def daemon_set(name: str, node_label: str) -> Json:
    """A DaemonSet of one pause container asking for little, on the nodes labelled
    `tailor-test=node_label` only (other tests' nodes share the cluster)."""
    labels = {"app": name}
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "20m", "memory": "16Mi"}},
    }
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [container], "nodeSelector": {"tailor-test": node_label}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": labels}, "template": template},
    }


def history(namespace: str, pods: dict[str, str], end: int) -> pd.DataFrame:
    """Two days of each pod's usage, at its node type's level; `pods`: name -> type."""
    rng = np.random.default_rng(7)
    times = np.arange(end - 2 * 86400, end, 300)
    frames = []
    for pod, kind in sorted(pods.items()):
        cores, memory = USE[kind]
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": pd.to_datetime(times, unit="s", utc=True),
                    "namespace": namespace,
                    "workload": "agent",
                    "pod": pod,
                    "container": "app",
                    "cpu": cores * (1 + rng.normal(0, 0.03, times.size)),
                    "memory": memory + rng.integers(0, 4 * Mi, times.size),
                    "cpu_request": 0.02,
                    "memory_request": 16.0 * Mi,
                    "cpu_limit": np.nan,
                    "memory_limit": np.nan,
                }
            )
        )
    return validate_usage(pd.concat(frames, ignore_index=True), "agent history")


def cpu_request(pod: Json) -> float:
    return float(Quantity.parse(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]))


def pods_by_type(api: RawApi, namespace: str, nodes: dict[str, str]) -> dict[str, Json]:
    return {nodes[p["spec"]["nodeName"]]: p for p in running_pods(api, namespace)}


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_a_daemonset_is_recommended_resized_and_admitted_per_node_group(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory, tmp_path: Path
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    install_crds(api)
    nodes = {f"small-{namespace}": SMALL, f"big-{namespace}": BIG}
    for node, kind in nodes.items():
        labels = {"tailor-test": namespace, DEFAULT_NODE_LABEL: kind}
        sim.register_node(node, cpu="8", memory="16Gi", labels=labels)
    manifest = vpa("agent", "agent", mode="InPlaceOrRecreate", recommender="kube-tailor")
    manifest["spec"]["targetRef"]["kind"] = "DaemonSet"
    api.create(vpa_collection(namespace), manifest)
    api.create(f"/apis/apps/v1/namespaces/{namespace}/daemonsets", daemon_set("agent", namespace))
    pods = wait_for_running(api, namespace, 2)
    names = {p["metadata"]["name"]: nodes[p["spec"]["nodeName"]] for p in pods}
    url = prometheus_server.start(usage_to_openmetrics(history(namespace, names, backfill_end())))

    # the recommender, as its shipped ServiceAccount: per group in the annotation
    apply_manifest(api, "recommender/rbac.yaml")
    account = kubeconfig_for(
        api, full_namespace.cluster, "kube-tailor", "tailor-recommender", tmp_path / "sa"
    )
    once = ["recommender", "--once", "--prometheus", url.url, "--history", "3d"]
    result = run(*once, "--kubeconfig", str(account))
    assert f"node groups: {namespace}/agent: {DEFAULT_NODE_LABEL}: {BIG}, {SMALL}" in result.stdout
    written = api.get(f"{vpa_collection(namespace)}/agent")
    figures = GroupRecommendations.decode(written["metadata"]["annotations"][GROUPS_ANNOTATION])
    assert figures.label == DEFAULT_NODE_LABEL and sorted(figures.groups) == [BIG, SMALL]
    target = {
        kind: figures.groups[kind].container_recommendations[0].target  # type: ignore[index]
        for kind in (SMALL, BIG)
    }
    for kind, (cores, memory) in USE.items():
        assert cores <= (target[kind].cpu_cores() or 0) <= cores * 1.4, (kind, target)
        assert memory <= (target[kind].memory_bytes() or 0) <= memory * 1.6, (kind, target)
    [overall] = written["status"]["recommendation"]["containerRecommendations"]
    both = float(Quantity.parse(overall["target"]["cpu"]))
    assert both >= (target[BIG].cpu_cores() or 0) * 0.95  # every pod's history together
    run(*once, "--kubeconfig", str(account))  # unchanged: the annotation is not rewritten
    again = api.get(f"{vpa_collection(namespace)}/agent")["metadata"]
    assert again["resourceVersion"] == written["metadata"]["resourceVersion"]

    # the updater: each pod resized in place to its own group's target
    config = str(full_namespace.cluster.kubeconfig)
    flags = ["follow", "--once", "--recommendations", "--format", "json", "--kubeconfig", config]
    outcomes = json.loads(run(*flags).stdout)
    mine = [o for o in outcomes if o["namespace"] == namespace]
    assert sorted(o["action"] for o in mine) == ["resize", "resize"], mine
    assert all("(node group node.kubernetes.io/instance-type=" in o["detail"] for o in mine)
    resized = pods_by_type(api, namespace, nodes)
    for kind in (SMALL, BIG):
        assert cpu_request(resized[kind]) == pytest.approx(target[kind].cpu_cores(), rel=0.01)

    # the webhook: a re-created pod is sized by the group of the node its affinity names
    small = resized[SMALL]["metadata"]["name"]

    def replaced() -> Json | None:
        found = pods_by_type(api, namespace, nodes).get(SMALL)
        return found if found and found["metadata"]["name"] != small else None

    with (
        webhook(full_namespace.cluster, tmp_path / "webhook") as (served, _),
        registered(api, served, namespace),
    ):
        api.delete(f"/api/v1/namespaces/{namespace}/pods/{small}", {"gracePeriodSeconds": 0})
        fresh = wait_until(replaced, timeout=30, what="the DaemonSet's new small pod")
    assert cpu_request(fresh) == pytest.approx(target[SMALL].cpu_cores(), rel=0.01)
    big = pods_by_type(api, namespace, nodes)[BIG]
    assert cpu_request(big) == pytest.approx(target[BIG].cpu_cores(), rel=0.01)
