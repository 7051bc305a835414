"""HPA/VPA conflicts: which HPA metrics fight a VPA over the same resource."""

from __future__ import annotations

from typing import Any

import pytest

from tailor.api import VerticalPodAutoscaler
from tailor.hpa import HpaConflict, conflict_message, contested, hpa_conflicts


def vpa(
    mode: str | None = "Recreate", policies: list[dict[str, Any]] | None = None
) -> VerticalPodAutoscaler:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    }
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    if policies is not None:
        spec["resourcePolicy"] = {"containerPolicies": policies}
    return VerticalPodAutoscaler.from_api(
        {"metadata": {"name": "web", "namespace": "shop"}, "spec": spec}
    )


def resource(name: str, utilization: int = 70) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def container_resource(container: str, name: str) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": 60}
    return {
        "type": "ContainerResource",
        "containerResource": {"name": name, "container": container, "target": target},
    }


def hpa(
    *metrics: dict[str, Any],
    name: str = "web",
    kind: str = "Deployment",
    target: str = "web",
    api_version: str | None = "apps/v1",
    namespace: str = "shop",
) -> dict[str, Any]:
    ref: dict[str, Any] = {"kind": kind, "name": target}
    if api_version is not None:
        ref["apiVersion"] = api_version
    spec: dict[str, Any] = {"scaleTargetRef": ref, "minReplicas": 1, "maxReplicas": 5}
    if metrics:
        spec["metrics"] = list(metrics)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def resources_of(conflicts: list[HpaConflict]) -> list[tuple[str, str, str | None]]:
    return [(c.hpa, c.resource, c.container) for c in conflicts]


def test_an_hpa_on_cpu_utilization_of_the_vpa_target_conflicts() -> None:
    conflicts = hpa_conflicts(vpa(), [hpa(resource("cpu"))])
    assert resources_of(conflicts) == [("web", "cpu", None)]
    assert conflicts[0].reason == "HPA web scales on cpu (Resource metric)"


def test_cpu_and_memory_both_conflict_but_other_metrics_do_not() -> None:
    pods = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue"}}}
    storage = resource("ephemeral-storage")
    conflicts = hpa_conflicts(vpa(), [hpa(pods, storage, resource("memory"), resource("cpu"))])
    assert resources_of(conflicts) == [("web", "memory", None), ("web", "cpu", None)]
    assert conflict_message(conflicts) == (
        "HPA web scales on memory (Resource metric); HPA web scales on cpu (Resource metric)"
    )


def test_an_hpa_without_metrics_scales_on_cpu_by_default() -> None:
    conflicts = hpa_conflicts(vpa(), [hpa()])
    assert resources_of(conflicts) == [("web", "cpu", None)]
    assert conflicts[0].defaulted
    assert "default 80 % CPU utilization" in conflicts[0].reason


@pytest.mark.parametrize(
    "mode", [None, "Auto", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace"]
)
def test_every_acting_mode_conflicts(mode: str | None) -> None:
    assert hpa_conflicts(vpa(mode), [hpa(resource("cpu"))])


def test_a_vpa_that_only_recommends_conflicts_with_nothing() -> None:
    assert hpa_conflicts(vpa("Off"), [hpa(resource("cpu"), resource("memory"))]) == []


@pytest.mark.parametrize(
    "other",
    [
        hpa(resource("cpu"), target="api"),
        hpa(resource("cpu"), kind="StatefulSet"),
        hpa(resource("cpu"), api_version="example.com/v1"),
        hpa(resource("cpu"), namespace="other"),
    ],
    ids=["name", "kind", "group", "namespace"],
)
def test_an_hpa_of_another_target_does_not_conflict(other: dict[str, Any]) -> None:
    assert hpa_conflicts(vpa(), [other]) == []


def test_the_group_is_compared_not_the_version_and_only_when_both_say() -> None:
    assert hpa_conflicts(vpa(), [hpa(resource("cpu"), api_version="apps/v1beta2")])
    assert hpa_conflicts(vpa(), [hpa(resource("cpu"), api_version=None)])


def test_a_resource_the_vpa_does_not_control_does_not_conflict() -> None:
    only_memory = vpa(policies=[{"containerName": "*", "controlledResources": ["memory"]}])
    conflicts = hpa_conflicts(only_memory, [hpa(resource("cpu"), resource("memory"))])
    assert resources_of(conflicts) == [("web", "memory", None)]


def test_containers_in_mode_off_take_no_part() -> None:
    policies = [{"containerName": "*", "mode": "Off"}]
    assert hpa_conflicts(vpa(policies=policies), [hpa(resource("cpu"))], ["app"]) == []
    # one container still controlled: the pod's cpu sum moves with it
    policies.append({"containerName": "app", "mode": "Auto"})
    assert hpa_conflicts(vpa(policies=policies), [hpa(resource("cpu"))], ["app", "sidecar"])


def test_without_the_containers_a_named_policy_still_counts() -> None:
    policies: list[dict[str, Any]] = [
        {"containerName": "*", "mode": "Off"},
        {"containerName": "app", "controlledResources": ["memory"]},
    ]
    found = hpa_conflicts(vpa(policies=policies), [hpa(resource("cpu"), resource("memory"))])
    assert resources_of(found) == [("web", "memory", None)]


def test_a_container_resource_metric_conflicts_only_for_a_controlled_container() -> None:
    policies = [{"containerName": "sidecar", "mode": "Off"}]
    metrics = (container_resource("sidecar", "cpu"), container_resource("app", "memory"))
    conflicts = hpa_conflicts(vpa(policies=policies), [hpa(*metrics)], ["app", "sidecar"])
    assert resources_of(conflicts) == [("web", "memory", "app")]
    assert conflicts[0].reason == (
        "HPA web scales on container app's memory (ContainerResource metric)"
    )


def test_a_container_resource_metric_of_a_container_the_pods_lack_fights_nothing() -> None:
    assert hpa_conflicts(vpa(), [hpa(container_resource("ghost", "cpu"))], ["app"]) == []
    assert hpa_conflicts(vpa(), [hpa(container_resource("ghost", "cpu"))])  # pods unknown


def test_contested_resources_per_container() -> None:
    metrics = (resource("cpu"), container_resource("app", "memory"))
    conflicts = hpa_conflicts(vpa(), [hpa(*metrics)], ["app", "sidecar"])
    assert contested(conflicts, "app") == {"cpu", "memory"}
    assert contested(conflicts, "sidecar") == {"cpu"}
    assert contested([], "app") == frozenset()


def test_every_hpa_is_named_once_per_metric() -> None:
    conflicts = hpa_conflicts(
        vpa(), [hpa(resource("cpu"), resource("cpu", 50)), hpa(resource("cpu"), name="second")]
    )
    assert resources_of(conflicts) == [("second", "cpu", None), ("web", "cpu", None)]  # by name


@pytest.mark.parametrize(
    "broken",
    [
        None,
        "hpa",
        {},
        {"metadata": {"name": "x"}},
        {"metadata": "x", "spec": {}},
        {"metadata": {"name": "x"}, "spec": {"scaleTargetRef": "web"}},
        {
            "metadata": {"name": 3},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}},
        },
        {
            "metadata": {"name": "x"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "metrics": "cpu"},
        },
    ],
)
def test_a_malformed_hpa_is_skipped(broken: Any) -> None:
    assert hpa_conflicts(vpa(), [broken, hpa(resource("cpu"))]) == [
        HpaConflict("web", "Resource", "cpu")
    ]


@pytest.mark.parametrize(
    "metric",
    [
        "cpu",
        {"type": "Resource"},
        {"type": "Resource", "resource": "cpu"},
        {"type": "Resource", "resource": {"name": ["cpu"]}},
        {"type": "ContainerResource", "containerResource": {"name": "cpu"}},
        {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": 7}},
        {"type": None},
    ],
)
def test_a_malformed_metric_is_skipped(metric: Any) -> None:
    found = hpa_conflicts(vpa(), [hpa(metric, resource("memory"))])
    assert resources_of(found) == [("web", "memory", None)]
