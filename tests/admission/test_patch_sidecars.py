"""Native sidecars at admission: sized as app containers, plain init containers left alone."""

from __future__ import annotations

import copy

import pytest

from admission.patch import (
    OBSERVED_CONTAINERS_ANNOTATION,
    UPDATES_ANNOTATION,
    PodUnreadable,
    pod_patch,
)
from tests.admission.objects import apply_patch, container, limit_range, pod, vpa

APP = container("app", {"cpu": "250m", "memory": "128Mi"}, {"cpu": "500m", "memory": "256Mi"})


def with_inits(*inits: dict) -> dict:
    found = pod(APP)
    found["spec"]["initContainers"] = [copy.deepcopy(i) for i in inits]
    return found


def sidecar(name: str = "proxy", **resources: dict) -> dict:
    return {
        **container(name, resources.get("requests"), resources.get("limits")),
        "restartPolicy": "Always",
    }


TARGETS = {
    "app": {"cpu": "1", "memory": "200Mi"},
    "proxy": {"cpu": "100m", "memory": "64Mi"},
    "setup": {"cpu": "3", "memory": "1Gi"},
}


def test_a_native_sidecar_gets_its_target_and_a_plain_init_container_does_not() -> None:
    setup = container("setup", {"cpu": "50m", "memory": "16Mi"})
    original = with_inits(
        setup, sidecar(requests={"cpu": "20m", "memory": "32Mi"}, limits={"memory": "64Mi"})
    )
    result = apply_patch(original, pod_patch(original, vpa("Auto", TARGETS)).operations)
    inits = result["spec"]["initContainers"]
    assert inits[0] == setup  # runs to completion before the pod starts: never sized
    assert inits[1]["resources"] == {
        "requests": {"cpu": "100m", "memory": "64Mi"},
        "limits": {"memory": "128Mi"},  # the limit keeps its 2x ratio
    }
    annotations = result["metadata"]["annotations"]
    assert annotations[OBSERVED_CONTAINERS_ANNOTATION] == "app, proxy"
    assert annotations[UPDATES_ANNOTATION].endswith(
        "; initContainer 1: cpu request, memory request, memory limit"
    )


def test_a_sidecar_without_resources_gets_them_created_at_its_init_index() -> None:
    bare = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
    original = with_inits(container("setup"), bare)
    operations = pod_patch(original, vpa("Auto", TARGETS)).operations
    paths = [op["path"] for op in operations]
    assert "/spec/initContainers/1/resources" in paths
    assert not any(p.startswith("/spec/initContainers/0") for p in paths)
    result = apply_patch(original, operations)
    assert result["spec"]["initContainers"][1]["resources"] == {
        "requests": {"cpu": "100m", "memory": "64Mi"}
    }


def test_a_pod_limit_range_counts_the_sidecar_in_the_pods_sum() -> None:
    """The LimitRanger sums sidecars with app containers (they run together)."""
    original = with_inits(sidecar(requests={"cpu": "100m"}))
    original["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    pod_max = limit_range({"type": "Pod", "max": {"cpu": "1"}})
    targets = {"app": {"cpu": "1"}, "proxy": {"cpu": "1"}}
    result = apply_patch(original, pod_patch(original, vpa("Auto", targets), [pod_max]).operations)
    app = result["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    proxy = result["spec"]["initContainers"][0]["resources"]["requests"]["cpu"]
    assert (app, proxy) == ("500m", "500m")


@pytest.mark.parametrize(
    ("inits", "message"),
    [
        ({"name": "x"}, r"spec.initContainers is not a list"),
        ([{"image": "x"}], r"spec.initContainers\[0\] has no name"),
        (
            [{"name": "p", "restartPolicy": "Always", "resources": {"requests": {"cpu": "lots"}}}],
            r"spec.initContainers\[0\]: .*lots",
        ),
    ],
)
def test_an_unreadable_init_container_list_raises_pod_unreadable(
    inits: object, message: str
) -> None:
    found = pod(APP)
    found["spec"]["initContainers"] = inits
    with pytest.raises(PodUnreadable, match=message):
        pod_patch(found, vpa("Auto", TARGETS))
