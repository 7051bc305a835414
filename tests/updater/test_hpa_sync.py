"""The updater's HPA rewrite on a cluster held in memory: written with its Events and VPA
condition, skipped in a dry run or without the opt-in, and a refusal said (the real path:
test_hpa_coordinated_cluster.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tailor.api.vpa import VerticalPodAutoscaler
from tailor.events import ObjectRef
from tailor.hpa_coordination import COORDINATE_ANNOTATION, COORDINATED_CONDITION
from tests.in_memory_cluster import InMemoryCluster
from updater.hpa_sync import HPA_REWRITTEN, sync_hpas

NOW = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
RS = "web-5d8f7c9b6d"


class Said:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, about: ObjectRef, kind: str, reason: str, message: str) -> bool:
        self.events.append((about.kind, reason, message))
        return True


def vpa_object(opted_in: bool = True) -> dict[str, Any]:
    annotations = {COORDINATE_ANNOTATION: "true"} if opted_in else {}
    return {
        "metadata": {"name": "web", "namespace": "shop", "annotations": annotations},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "updatePolicy": {"updateMode": "InPlace"},
        },
    }


def hpa_object() -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": 60}
    return {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": target}}],
        },
    }


def containers(cpu: str) -> list[dict[str, Any]]:
    return [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]


def cluster(opted_in: bool = True) -> InMemoryCluster:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "1"}
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": RS, "uid": "2"}
    pods = [
        {
            "metadata": {
                "name": f"{RS}-{i}",
                "namespace": "shop",
                "ownerReferences": [{**owner, "controller": True}],
            },
            "spec": {"containers": containers(cpu)},
            "status": {"phase": "Running"},
        }
        for i, cpu in enumerate(("300m", "500m"))  # mean 400m
    ]
    replica_set = {
        "metadata": {
            "name": RS,
            "namespace": "shop",
            "ownerReferences": [{**deployment, "controller": True}],
        }
    }
    template = {"spec": {"template": {"spec": {"containers": containers("200m")}}}}
    return InMemoryCluster(
        pod_objects=pods,
        vpa_objects=[vpa_object(opted_in)],
        hpa_objects=[hpa_object()],
        controller_objects={
            "ReplicaSet": {("shop", RS): replica_set},
            "Deployment": {("shop", "web"): {"metadata": {"name": "web"}, **template}},
        },
    )


def run(found: InMemoryCluster, dry_run: bool = False) -> tuple[list[Any], Said]:
    said = Said()
    vpas = [VerticalPodAutoscaler.from_api(v) for v in found.vpa_objects]
    hpas = {"shop": found.hpas()}
    controllers = {"ReplicaSet": found.controllers("ReplicaSet")}
    return sync_hpas(found, vpas, hpas, controllers, said, NOW, dry_run), said


def target(found: InMemoryCluster) -> int:
    return int(
        found.hpa_objects[0]["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"]
    )


def test_the_hpa_is_rewritten_and_said_on_the_hpa_and_the_vpa() -> None:
    found = cluster()
    [synced], said = run(found)
    text = "HPA web: cpu target 60% of 200m -> 30% of 400m: scale-out at 120m per pod"
    assert (synced.hpa, synced.applied, synced.detail) == ("web", True, text)
    assert target(found) == 30
    assert said.events == [
        ("HorizontalPodAutoscaler", HPA_REWRITTEN, text),
        ("VerticalPodAutoscaler", HPA_REWRITTEN, text),
    ]
    [condition] = found.vpa_objects[0]["status"]["conditions"]
    assert (condition["type"], condition["message"]) == (COORDINATED_CONDITION, text)
    assert run(found)[0] == []  # done: nothing more to write


def test_a_dry_run_or_a_vpa_that_did_not_opt_in_writes_nothing() -> None:
    found = cluster()
    [synced], said = run(found, dry_run=True)
    assert synced.applied and target(found) == 60 and said.events == []
    plain = cluster(opted_in=False)
    assert run(plain)[0] == [] and target(plain) == 60


def test_a_refused_rewrite_is_said_and_the_vpa_left_as_it_was() -> None:
    found = cluster()
    found.refuse["patch-hpa"] = (403, "forbidden")
    [synced], said = run(found)
    assert (synced.applied, synced.detail) == (False, "not rewritten (403): forbidden")
    assert target(found) == 60 and said.events == [] and "status" not in found.vpa_objects[0]
