"""Controllers and scheduler with simulated nodes: Deployments run, evicted pods come back."""

from __future__ import annotations

import pytest

from tests.cluster.fixtures import FullNamespace
from tests.cluster.rawapi import Json, pod_path
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import deployment

pytestmark = pytest.mark.cluster


def test_a_deployment_is_scheduled_onto_simulated_nodes_and_evictions_are_replaced(
    full_namespace: FullNamespace,
) -> None:
    # the fixture deletes the namespace while the simulator still runs: left behind, the
    # Deployment's pods were evicted from the stopped nodes minutes later, and their
    # replacements (no nodeSelector) ran on the nodes of later tests
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    nodes = {f"full-a-{namespace}", f"full-b-{namespace}"}
    for node in sorted(nodes):
        sim.register_node(node, cpu="2", memory="4Gi")
    api.create(
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        deployment("web", None, {"requests": {"cpu": "1", "memory": "256Mi"}}, 3),
    )

    def running() -> list[Json]:
        pods = api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        ok = [p for p in live if p["status"].get("phase") == "Running"]
        return ok if len(ok) == 3 else []

    pods = wait_until(running, timeout=30, what="3 replicas Running")
    assert {p["spec"]["nodeName"] for p in pods} == nodes  # 2 CPUs each: spread over both
    victim = pods[0]["metadata"]["name"]
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": victim, "namespace": namespace},
    }
    api.create(pod_path(namespace, victim, "eviction"), eviction)
    replaced = wait_until(
        lambda: (now := running()) and victim not in {p["metadata"]["name"] for p in now},
        timeout=30,
        what="evicted replica replaced",
    )
    assert replaced
