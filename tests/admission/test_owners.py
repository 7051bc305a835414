"""The watched owner links and HPAs a review reads instead of the API server (pure)."""

from __future__ import annotations

from typing import Any

from admission.owners import Index, hpa_spec, owner_links
from tailor.kube import WatchEvent


def replica_set(name: str, deployment: str = "web", version: str = "7") -> dict[str, Any]:
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment, "controller": True}
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "resourceVersion": version,
            "ownerReferences": [owner],
            "uid": "r1",
        },
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "x" * 500}]}}},
    }


def owner_name(index: Index, name: str) -> str:
    found = index.get("shop", name)
    assert found is not None
    return str(found["metadata"]["ownerReferences"][0]["name"])


def test_a_replica_set_is_kept_as_its_owner_links_only() -> None:
    kept = owner_links(replica_set("web-1"))
    assert kept == {
        "metadata": {
            "name": "web-1",
            "namespace": "shop",
            "ownerReferences": [replica_set("web-1")["metadata"]["ownerReferences"][0]],
        }
    }
    assert owner_links({"metadata": {"namespace": "shop"}}) is None  # no name: skipped


def test_list_then_events_then_a_newer_list_wins_over_an_older_watch() -> None:
    index = Index("ReplicaSet")
    index.replace([replica_set("web-1"), {"metadata": {}}], "10")
    assert index.position() == (1, "10") and len(index) == 1
    assert index.apply(WatchEvent("ADDED", replica_set("web-2", "api", "11")), 1)
    assert owner_name(index, "web-2") == "api"
    assert index.apply(WatchEvent("DELETED", replica_set("web-1", version="12")), 1)
    assert index.get("shop", "web-1") is None
    assert index.position() == (1, "12")
    index.replace([], "20")
    assert not index.apply(WatchEvent("ADDED", replica_set("web-3")), 1)  # an old watch
    assert index.get("shop", "web-3") is None and len(index) == 0


def test_a_read_by_name_is_learned_but_never_overrides_the_watch() -> None:
    index = Index("ReplicaSet")
    index.replace([replica_set("web-1", "web")], "1")
    index.learn(replica_set("web-1", "other"))
    assert owner_name(index, "web-1") == "web"
    index.learn(replica_set("web-9", "late"))
    assert index.get("shop", "web-9") is not None


def test_hpas_are_kept_as_their_spec_by_namespace_and_a_status_change_is_no_change() -> None:
    hpas = Index("HorizontalPodAutoscalers", keep=hpa_spec)
    spec = {"minReplicas": 2, "metrics": [{"type": "Resource", "resource": {"name": "cpu"}}]}
    metadata = {"name": "web", "namespace": "shop", "resourceVersion": "3"}
    hpa = {"metadata": metadata, "spec": spec, "status": {"currentReplicas": 2}}
    hpas.replace([hpa, {"metadata": {"name": "db", "namespace": "other"}}], "3")
    kept = {"metadata": {"name": "web", "namespace": "shop"}, "spec": spec}
    assert hpas.namespace("shop") == [kept]
    assert hpas.namespace("none") == []
    before, epoch = hpas.revision("shop"), hpas.epoch
    scaled = {
        **hpa,
        "metadata": {**metadata, "resourceVersion": "4"},
        "status": {"currentReplicas": 5},
    }
    assert hpas.apply(WatchEvent("MODIFIED", scaled), epoch)
    assert hpas.revision("shop") == before
    changed = {**scaled, "spec": {**spec, "minReplicas": 3}}
    assert hpas.apply(WatchEvent("MODIFIED", changed), epoch)
    assert hpas.revision("shop") != before and hpas.revision("other") == (epoch, 0)
