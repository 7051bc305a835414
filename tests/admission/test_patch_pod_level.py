"""The webhook sizing a pod that sets pod-level resources (spec.resources): the stanza takes
the summed targets, containers without their own requests get none."""

from __future__ import annotations

from typing import Any

from admission.patch import UPDATES_ANNOTATION, pod_patch
from tests.admission.objects import apply_patch, container, limit_range, pod, vpa

TARGETS = {"a": {"cpu": "300m", "memory": "200Mi"}, "b": {"cpu": "100m", "memory": "100Mi"}}


def pod_level(*containers: Any, requests: Any, limits: Any = None) -> dict[str, Any]:
    found = pod(*containers)
    found["spec"]["resources"] = {"requests": requests, **({"limits": limits} if limits else {})}
    return found


def test_the_stanza_takes_the_sum_and_sharing_containers_stay_without_requests() -> None:
    original = pod_level(
        container("a"),
        container("b"),
        requests={"cpu": "1", "memory": "1Gi"},
        limits={"cpu": "2", "memory": "2Gi"},
    )
    result = apply_patch(original, pod_patch(original, vpa("Auto", TARGETS)).operations)
    assert result["spec"]["resources"] == {
        "requests": {"cpu": "400m", "memory": "300Mi"},
        "limits": {"cpu": "800m", "memory": "600Mi"},
    }
    assert [c.get("resources") for c in result["spec"]["containers"]] == [
        c.get("resources") for c in original["spec"]["containers"]
    ]
    assert result["metadata"]["annotations"][UPDATES_ANNOTATION] == (
        "Pod resources updated by web: pod: cpu request, memory request, cpu limit, memory limit"
    )


def test_an_own_request_is_sized_and_its_limit_kept_within_the_pods() -> None:
    own = container("a", {"cpu": "100m"}, {"cpu": "200m"})
    stanza = {"cpu": "1", "memory": "1Gi"}
    original = pod_level(own, container("b"), requests=stanza, limits=dict(stanza))
    targets = {"a": {"cpu": "500m", "memory": "100Mi"}, "b": {"cpu": "100m", "memory": "100Mi"}}
    result = apply_patch(original, pod_patch(original, vpa("Auto", targets)).operations)
    assert result["spec"]["resources"]["requests"] == {"cpu": "600m", "memory": "200Mi"}
    assert result["spec"]["resources"]["limits"] == {"cpu": "600m", "memory": "200Mi"}
    first = result["spec"]["containers"][0]["resources"]
    assert first == {"requests": {"cpu": "500m"}, "limits": {"cpu": "600m"}}  # no memory added
    said = result["metadata"]["annotations"][UPDATES_ANNOTATION]
    assert "a: cpu limit lowered to the pod-level limit" in said


def test_a_missing_target_is_said_not_guessed() -> None:
    original = pod_level(container("a"), container("b"), requests={"cpu": "1"})
    patch = pod_patch(original, vpa("Auto", {"a": TARGETS["a"]}))
    result = apply_patch(original, patch.operations)
    assert result["spec"]["resources"] == {"requests": {"cpu": "1"}}
    assert "pod-level cpu request left as is: no cpu target for b" in patch.reason


def test_a_pod_limit_range_bounds_the_stanza_itself() -> None:
    original = pod_level(container("a"), container("b"), requests={"cpu": "1"}, limits={"cpu": "2"})
    ceiling = limit_range({"type": "Pod", "max": {"cpu": "500m"}})
    patch = pod_patch(original, vpa("Auto", TARGETS), [ceiling])
    result = apply_patch(original, patch.operations)
    # the LimitRanger checks pod-level amounts (403 above max): 400m and 800m -> 500m
    assert result["spec"]["resources"] == {"requests": {"cpu": "400m"}, "limits": {"cpu": "500m"}}
    assert "pod-level cpu limit capped to the Pod LimitRange max" in patch.reason


def test_a_resource_the_pod_does_not_request_at_pod_level_is_sized_per_container() -> None:
    original = pod_level(container("a"), container("b"), requests={"memory": "1Gi"})
    result = apply_patch(original, pod_patch(original, vpa("Auto", TARGETS)).operations)
    assert result["spec"]["resources"] == {"requests": {"memory": "300Mi"}}
    requests = [c["resources"]["requests"] for c in result["spec"]["containers"]]
    assert requests == [{"cpu": "300m"}, {"cpu": "100m"}]  # cpu is not shared: as any pod's
