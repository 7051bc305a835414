"""Events written to the real API server through one pooled connection."""

from __future__ import annotations

from typing import Any

import kubernetes.client

from tailor.events import NORMAL, EventRecorder, KubeEventSink, ObjectRef
from tests.cluster.controlplane import ControlPlane
from tests.cluster.rawapi import RawApi


def _connections_opened(client: kubernetes.client.ApiClient) -> int:
    pools: Any = client.rest_client.pool_manager.pools
    return sum(pool.num_connections for pool in pools._container.values())


def test_events_reuse_one_connection_instead_of_opening_one_each(
    kube_cluster: ControlPlane, kube_api: RawApi, kube_namespace: str
) -> None:
    with kube_cluster.api_client() as client:
        recorder = EventRecorder(KubeEventSink(kubernetes.client.CoreV1Api(client)), "test")
        for index in range(6):  # three objects: a create and a repeat (a patch) each
            about = ObjectRef("v1", "Pod", kube_namespace, f"pod-{index // 2}")
            assert recorder.record(about, NORMAL, "Sized", "sized")
        opened = _connections_opened(client)
    listed = kube_api.get(f"/api/v1/namespaces/{kube_namespace}/events")["items"]
    assert sorted((e["involvedObject"]["name"], e["count"]) for e in listed) == [
        ("pod-0", 2),
        ("pod-1", 2),
        ("pod-2", 2),
    ]
    assert opened == 1
