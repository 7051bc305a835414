"""A review reads its pod's owners and the HPAs from watches of the real API server, not
through one API call per pod; the one read left is counted and guarded by the breaker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from admission.breaker import CircuitBreaker
from admission.cluster_cache import ClusterCache
from admission.metrics import Batch
from tailor.kube import ClusterError, api_client_from
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import hpa_collection

SEEN = 5.0  # seconds a change may take to reach the cache through its watch


def api_reads(batch: Batch) -> list[str]:
    return [label for kind, label, _ in batch.records if kind == "api"]


@pytest.fixture
def cache(kube_cluster: ControlPlane, kube_api: RawApi) -> Iterator[tuple[ClusterCache, Batch]]:
    install_crds(kube_api)
    batch = Batch()
    watched = ClusterCache(kube_cluster.api_client(), metrics=batch)
    watched.refresh()
    watched.start()
    try:
        yield watched, batch
    finally:
        watched.stop()


def test_a_new_replica_set_and_hpa_arrive_through_the_watch_and_need_no_read(
    cache: tuple[ClusterCache, Batch], kube_api: RawApi, kube_namespace: str
) -> None:
    watched, batch = cache
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d1",
             "controller": True}  # fmt: skip
    labels = {"app": "web"}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "a", "image": "x"}]},
    }
    spec = {"replicas": 0, "selector": {"matchLabels": labels}, "template": template}
    kube_api.create(
        f"/apis/apps/v1/namespaces/{kube_namespace}/replicasets",
        {"metadata": {"name": "web-1", "ownerReferences": [owner]}, "spec": spec},
    )
    wait_until(
        lambda: watched.has_controller("ReplicaSet", kube_namespace, "web-1"),
        timeout=SEEN,
        what="the ReplicaSet through the watch",
    )
    found = watched.controller("ReplicaSet", kube_namespace, "web-1")
    assert found == {
        "metadata": {"name": "web-1", "namespace": kube_namespace, "ownerReferences": [owner]}
    }
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    hpa = {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": target, "maxReplicas": 3}}
    kube_api.create(hpa_collection(kube_namespace), hpa)
    wait_until(lambda: watched.hpas(kube_namespace), timeout=SEEN, what="the HPA through the watch")
    assert api_reads(batch) == []  # neither asked the API server during a review
    # one the watch never brought (it does not exist): read once, then remembered absent
    assert watched.controller("ReplicaSet", kube_namespace, "gone-1") is None
    assert watched.controller("ReplicaSet", kube_namespace, "gone-1") is None
    assert api_reads(batch) == ["ok"]


def test_reads_to_an_api_server_that_is_away_open_the_breaker(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    batch = Batch()
    away = ClusterCache(api_client_from(kubeconfig), metrics=batch, breaker=CircuitBreaker(3, 60))
    assert not away.has_controller("ReplicaSet", "shop", "web-1")
    for _ in range(3):
        with pytest.raises(ClusterError, match="cannot reach the API server"):
            away.controller("ReplicaSet", "shop", "web-1")
    with pytest.raises(ClusterError, match="not read: the API server failed repeatedly"):
        away.controller("ReplicaSet", "shop", "web-1")
    assert api_reads(batch) == ["failed", "failed", "failed", "breaker_open"]
