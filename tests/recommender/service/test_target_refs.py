"""Upstream's ConfigUnsupported for a VPA whose targetRef can match no pod (pure: the
cluster is a stand-in answering `controller`; the real API server is in
test_service_cluster.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import AppsV1Api, BatchV1Api, CoreV1Api

from recommender.service.status import ServedVpa, vpa_status
from recommender.service.target_refs import (
    CANNOT_READ,
    HAS_PARENT,
    target_problem,
    target_problems,
)
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.controller_kinds import CONTROLLER_KINDS
from tailor.kube import ClusterError
from tests.recommender.service.test_status import NOW, rows


class Controllers:
    """Answers `controller(kind, namespace, name)` from a dict; counts the reads."""

    def __init__(self, objects: dict[tuple[str, str, str], Any], broken: bool = False) -> None:
        self.objects, self.broken, self.reads = objects, broken, 0

    def controller(self, kind: str, namespace: str, name: str) -> Any:
        self.reads += 1
        if self.broken:
            raise ClusterError("cannot read Deployment shop/web: forbidden")
        return self.objects.get((kind, namespace, name))


def targeting(kind: str, name: str, api_version: str | None = "apps/v1") -> VerticalPodAutoscaler:
    ref: dict[str, Any] = {"kind": kind, "name": name}
    if api_version is not None:
        ref["apiVersion"] = api_version
    return VerticalPodAutoscaler.from_api(
        {"metadata": {"name": "v", "namespace": "shop"}, "spec": {"targetRef": ref}}
    )


OWNED = {
    "metadata": {"ownerReferences": [{"kind": "Deployment", "name": "web", "controller": True}]}
}
CLUSTER = Controllers({("Deployment", "shop", "web"): {"metadata": {}},
                       ("ReplicaSet", "shop", "web-5d8"): OWNED})  # fmt: skip


def problem(vpa: VerticalPodAutoscaler, cluster: Controllers = CLUSTER) -> str | None:
    return target_problem(cluster, vpa)  # type: ignore[arg-type]


def test_a_missing_or_not_top_most_target_says_upstreams_words() -> None:
    assert problem(targeting("Deployment", "web")) is None
    assert problem(targeting("Deployment", "wbe")) == (
        f"{CANNOT_READ}. Reason: Deployment shop/wbe not found"
    )
    assert problem(targeting("ReplicaSet", "web-5d8")) == HAS_PARENT
    assert problem(targeting("Deployment", "web", api_version=None)) is None


@pytest.mark.parametrize(
    ("kind", "api_version"),
    [("Rollout", "argoproj.io/v1alpha1"), ("Deployment", "example.com/v1"), ("Pod", "v1")],
)
def test_kinds_we_do_not_read_are_not_claimed(kind: str, api_version: str) -> None:
    cluster = Controllers({})
    assert problem(targeting(kind, "ghost", api_version), cluster) is None
    assert cluster.reads == 0


def test_a_read_that_fails_is_reported_and_claims_nothing() -> None:
    found, failed = target_problems(Controllers({}, broken=True), [targeting("Deployment", "web")])  # type: ignore[arg-type]
    assert found == {}
    assert failed == ["shop/v: cannot read Deployment shop/web: forbidden"]


def test_the_condition_says_it_beside_no_pods_matched() -> None:
    entry = ServedVpa(targeting("Deployment", "wbe"))
    status = vpa_status(entry, rows(), NOW, target_problem="Cannot read targetRef")
    said = {c["type"]: (c["status"], c.get("message")) for c in status["conditions"]}
    assert said["ConfigUnsupported"] == ("True", "Cannot read targetRef")
    assert said["NoPodsMatched"] == ("True", "No pods match this VPA object")
    assert "ConfigUnsupported" not in {
        c["type"] for c in vpa_status(entry, rows(), NOW)["conditions"]
    }


def test_the_cluster_has_a_read_call_for_every_well_known_target_kind() -> None:
    clients = {"apps": AppsV1Api, "batch": BatchV1Api, "core": CoreV1Api}
    for kind in CONTROLLER_KINDS:
        client, _, read = CONTROLLER_KINDS[kind]
        assert callable(getattr(clients[client], read, None)), kind
