"""Building the admission patch from a pod, its VPA and LimitRanges (pure; worked by hand)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from admission.patch import (
    OBSERVED_CONTAINERS_ANNOTATION,
    UPDATES_ANNOTATION,
    PodUnreadable,
    json_pointer,
    pod_patch,
)
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.quantity import Quantity
from tailor.startup_boost import BOOST_ANNOTATION
from tests.admission.objects import apply_patch, container, limit_range, pod, vpa

APP = container("app", {"cpu": "250m", "memory": "128Mi"}, {"cpu": "500m", "memory": "256Mi"})
SIDECAR = container("sidecar", {"cpu": "50m", "memory": "32Mi"}, {"memory": "32Mi"})
TARGET = {"app": {"cpu": "1", "memory": "200Mi"}}


def patched(pod_json: dict, *args: object, **kwargs: object) -> dict:
    return apply_patch(pod_json, pod_patch(pod_json, *args, **kwargs).operations)  # type: ignore[arg-type]


def resources(pod_json: dict, index: int = 0) -> dict:
    return pod_json["spec"]["containers"][index]["resources"]


def test_requests_become_the_target_and_limits_keep_their_ratio() -> None:
    original = pod(APP, SIDECAR)
    result = patched(original, vpa("Auto", TARGET))
    assert resources(result) == {
        "requests": {"cpu": "1", "memory": "200Mi"},
        "limits": {"cpu": "2", "memory": "400Mi"},
    }
    assert resources(result, 1) == resources(original, 1)  # no recommendation: untouched
    assert result["metadata"]["annotations"] == {
        UPDATES_ANNOTATION: "Pod resources updated by web: "
        "container 0: cpu request, memory request, cpu limit, memory limit",
        OBSERVED_CONTAINERS_ANNOTATION: "app, sidecar",
    }


@pytest.mark.parametrize(
    "mode", ["Initial", "Recreate", "Auto", "InPlace", "InPlaceOrRecreate", None]
)
def test_every_mode_but_off_applies_at_creation(mode: str | None) -> None:
    assert resources(patched(pod(APP), vpa(mode, TARGET)))["requests"]["cpu"] == "1"


def test_mode_off_leaves_the_pod_as_written() -> None:
    result = pod_patch(pod(APP), vpa("Off", TARGET))
    assert result.operations == ()
    assert result.reason == "VPA web has updateMode Off"


def test_no_vpa_or_no_recommendation_yet_leaves_the_pod_as_written() -> None:
    assert pod_patch(pod(APP), None).operations == ()
    assert pod_patch(pod(APP), vpa("Auto", None)).reason == "VPA web has no recommendation yet"
    assert pod_patch(pod(APP), vpa("Auto", {})).operations == ()


def test_max_allowed_caps_the_request_and_the_annotation_says_so() -> None:
    cap = {"containerName": "*", "maxAllowed": {"cpu": "600m"}}
    result = patched(pod(APP), vpa("Auto", TARGET, [cap]))
    assert resources(result)["requests"] == {"cpu": "600m", "memory": "200Mi"}
    assert resources(result)["limits"] == {"cpu": "1200m", "memory": "400Mi"}
    assert result["metadata"]["annotations"][UPDATES_ANNOTATION] == (
        "Pod resources updated by web: container 0: cpu capped to maxAllowed, "
        "cpu request, memory request, cpu limit, memory limit"
    )


def test_a_container_limit_range_max_caps_the_limit_and_the_request_with_it() -> None:
    ceiling = limit_range({"type": "Container", "max": {"memory": "300Mi"}})
    result = patched(pod(APP), vpa("Auto", TARGET), [ceiling])
    # 300Mi at the limit/request ratio of 2 leaves 150Mi for the request.
    assert resources(result)["requests"]["memory"] == "150Mi"
    assert resources(result)["limits"]["memory"] == "300Mi"
    assert (
        "memory capped to fit Max in container LimitRange"
        in (result["metadata"]["annotations"][UPDATES_ANNOTATION])
    )


def test_a_pod_limit_range_max_scales_the_recommended_containers_together() -> None:
    two = pod(
        container("a", {"cpu": "100m"}, {"cpu": "100m"}),
        container("b", {"cpu": "100m"}, {"cpu": "100m"}),
    )
    pod_max = limit_range({"type": "Pod", "max": {"cpu": "1"}})
    result = patched(two, vpa("Auto", {"a": {"cpu": "1"}, "b": {"cpu": "1"}}), [pod_max])
    assert [resources(result, i)["limits"]["cpu"] for i in (0, 1)] == ["500m", "500m"]


def test_a_pod_limit_range_max_also_bounds_the_sum_of_requests() -> None:
    """The LimitRanger refuses a pod whose requests sum past max, limits or not."""
    two = pod(container("a", {"cpu": "100m"}), container("b", {"cpu": "500m"}, {"cpu": "500m"}))
    pod_max = limit_range({"type": "Pod", "max": {"cpu": "1"}})
    result = patched(two, vpa("Auto", {"a": {"cpu": "2"}}), [pod_max])
    assert resources(result)["requests"]["cpu"] == "500m"  # 1 core less b's fixed 500m
    assert resources(result, 1) == {"requests": {"cpu": "500m"}, "limits": {"cpu": "500m"}}


def test_a_pod_limit_request_ratio_holds_on_the_pods_totals() -> None:
    """Scaled apart, two containers can each keep their ratio and break the pod's."""
    two = pod(
        container("a", {"cpu": "100m"}, {"cpu": "1"}), container("b", {"cpu": "1"}, {"cpu": "1"})
    )
    ratio = limit_range({"type": "Pod", "maxLimitRequestRatio": {"cpu": "2"}})
    targets = {"a": {"cpu": "1"}, "b": {"cpu": "100m"}}
    unbounded = patched(two, vpa("Auto", targets))
    assert resources(unbounded)["limits"]["cpu"] == "10"  # 10x kept: the pod's total 10.1 / 1.1
    result = patched(two, vpa("Auto", targets), [ratio])
    assert resources(result) == {"requests": {"cpu": "1"}, "limits": {"cpu": "2100m"}}
    assert resources(result, 1) == {"requests": {"cpu": "100m"}, "limits": {"cpu": "100m"}}
    assert (
        "limit lowered to fit the Pod maxLimitRequestRatio"
        in (result["metadata"]["annotations"][UPDATES_ANNOTATION])
    )


def test_requests_only_keeps_limits_and_caps_the_request_at_the_limit() -> None:
    only = {"containerName": "app", "controlledValues": "RequestsOnly"}
    result = patched(pod(APP), vpa("Auto", {"app": {"cpu": "2", "memory": "64Mi"}}, [only]))
    assert resources(result) == {
        "requests": {"cpu": "500m", "memory": "64Mi"},
        "limits": {"cpu": "500m", "memory": "256Mi"},
    }


def test_a_guaranteed_pod_stays_guaranteed() -> None:
    guaranteed = container("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})
    result = patched(pod(guaranteed), vpa("Auto", {"app": {"cpu": "300m", "memory": "300Mi"}}))
    values = resources(result)
    assert values["requests"] == values["limits"] == {"cpu": "300m", "memory": "300Mi"}


def test_missing_resources_requests_and_annotations_are_created_before_they_are_filled() -> None:
    bare = {"name": "app", "image": "registry.k8s.io/pause:3.10"}  # no resources at all
    no_requests = container("side", None, {"memory": "64Mi"})
    original = pod(bare, no_requests)
    targets = {"app": {"cpu": "100m", "memory": "100Mi"}, "side": {"cpu": "20m"}}
    operations = pod_patch(original, vpa("Initial", targets)).operations
    paths = [op["path"] for op in operations]
    assert paths.index("/spec/containers/0/resources") < paths.index(
        "/spec/containers/0/resources/requests"
    )
    assert paths.index("/metadata/annotations") < paths.index("/metadata/annotations/vpaUpdates")
    result = apply_patch(original, operations)
    assert resources(result) == {"requests": {"cpu": "100m", "memory": "100Mi"}}  # no limit
    assert resources(result, 1) == {"requests": {"cpu": "20m"}, "limits": {"memory": "64Mi"}}


def test_annotations_already_there_are_kept_and_ours_replace_older_ones() -> None:
    original = pod(APP, annotations={"team": "shop", UPDATES_ANNOTATION: "stale"})
    annotations = patched(original, vpa("Auto", TARGET))["metadata"]["annotations"]
    assert annotations["team"] == "shop"
    assert annotations[UPDATES_ANNOTATION].startswith("Pod resources updated by web: container 0")
    assert not any(
        op["path"] == "/metadata/annotations"
        for op in pod_patch(original, vpa("Auto", TARGET)).operations
    )


def test_json_pointer_escapes_slash_and_tilde() -> None:
    assert json_pointer("metadata", "annotations", "example.com/a~b") == (
        "/metadata/annotations/example.com~1a~0b"
    )
    assert apply_patch({"a": {}}, [{"op": "add", "path": "/a/x~1y~0z", "value": 1}]) == {
        "a": {"x/y~z": 1}
    }


def test_resources_the_policy_does_not_control_and_other_resources_stay() -> None:
    gpu = container(
        "app",
        {"cpu": "250m", "memory": "128Mi", "ephemeral-storage": "1Gi"},
        {"memory": "256Mi", "nvidia.com/gpu": "1"},
    )
    cpu_only = {"containerName": "*", "controlledResources": ["cpu"]}
    result = patched(pod(gpu), vpa("Auto", TARGET, [cpu_only]))
    assert resources(result) == {
        "requests": {"cpu": "1", "memory": "128Mi", "ephemeral-storage": "1Gi"},
        "limits": {"memory": "256Mi", "nvidia.com/gpu": "1"},
    }
    assert result["metadata"]["annotations"][UPDATES_ANNOTATION].endswith(
        "container 0: cpu request"
    )


def test_a_container_in_mode_off_and_a_recommendation_for_no_container_are_ignored() -> None:
    off = {"containerName": "sidecar", "mode": "Off"}
    targets = {**TARGET, "sidecar": {"cpu": "1"}, "gone": {"cpu": "3"}}
    result = patched(pod(APP, SIDECAR), vpa("Auto", targets, [off]))
    assert resources(result, 1) == resources(pod(APP, SIDECAR), 1)
    assert "container 1" not in result["metadata"]["annotations"][UPDATES_ANNOTATION]


def test_a_recommendation_already_in_place_only_records_the_observed_containers() -> None:
    in_place = {"app": {"cpu": "250m", "memory": "128Mi"}}
    result = pod_patch(pod(APP), vpa("Auto", in_place))
    assert [op["path"] for op in result.operations] == [
        "/metadata/annotations",
        "/metadata/annotations/vpaObservedContainers",
    ]
    assert result.reason == "VPA web: recommendation already in place"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "spec.containers is missing or empty"),
        ({"containers": [{"image": "x"}]}, "has no name"),
        ({"containers": [{"name": "a", "resources": []}]}, "resources is not an object"),
        ({"containers": [{"name": "a", "resources": {"requests": {"cpu": "lots"}}}]}, "lots"),
    ],
)
def test_a_pod_that_cannot_be_read_raises_pod_unreadable(spec: dict, message: str) -> None:
    with pytest.raises(PodUnreadable, match=message):
        pod_patch({"metadata": {}, "spec": spec}, vpa("Auto", TARGET))


def boosting(found: VerticalPodAutoscaler, boost: dict, container: str | None = None) -> Any:
    """`found` with a CPU startup boost for the pod, or for one container's policy."""
    document = found.to_api()
    if container is None:
        document["spec"]["startupBoost"] = {"cpu": boost}
    else:
        policy = {"containerName": container, "startupBoost": {"cpu": boost}}
        document["spec"]["resourcePolicy"] = {"containerPolicies": [policy]}
    return VerticalPodAutoscaler.from_api(document)


def test_a_startup_boost_multiplies_the_recommended_cpu_and_records_the_base() -> None:
    factor = {"type": "Factor", "factor": 3, "duration": "30s"}
    result = patched(pod(APP, SIDECAR), boosting(vpa("Auto", TARGET), factor))
    assert resources(result) == {
        "requests": {"cpu": "3", "memory": "200Mi"},  # 3 x the target of 1 core
        "limits": {"cpu": "6", "memory": "400Mi"},  # its limit, 2 cores, x 3
    }
    assert resources(result, 1)["requests"]["cpu"] == "150m"  # no recommendation: 3 x 50m
    assert "cpu" not in resources(result, 1)["limits"]  # no limit stays no limit
    annotations = result["metadata"]["annotations"]
    assert json.loads(annotations[BOOST_ANNOTATION]) == {
        "holdSeconds": 30.0,
        "containers": {
            "app": {"request": "3", "limit": "6", "baseRequest": "1", "baseLimit": "2"},
            "sidecar": {"request": "150m", "limit": None, "baseRequest": "50m", "baseLimit": None},
        },
    }
    assert "cpu startup boost to 3" in annotations[UPDATES_ANNOTATION]


def test_a_startup_boost_applies_in_mode_off_and_a_containers_own_wins() -> None:
    quantity = {"type": "Quantity", "quantity": "500m"}
    result = patched(pod(APP, SIDECAR), boosting(vpa("Off", TARGET), quantity, "sidecar"))
    assert resources(result, 0) == resources(pod(APP), 0)  # no boost of its own, mode Off
    assert resources(result, 1)["requests"] == {"cpu": "550m", "memory": "32Mi"}
    boost = json.loads(result["metadata"]["annotations"][BOOST_ANNOTATION])
    assert boost == {
        "holdSeconds": 0.0,
        "containers": {
            "sidecar": {"request": "550m", "limit": None, "baseRequest": "50m", "baseLimit": None}
        },
    }
    without = pod_patch(pod(APP), vpa("Off", TARGET))
    assert BOOST_ANNOTATION not in str(without.operations)


def test_upstreams_max_allowed_cpu_boost_caps_the_boosted_request_and_its_limit() -> None:
    factor = {"type": "Factor", "factor": 3}
    two = Quantity.parse("2")
    result = patched(pod(APP, SIDECAR), boosting(vpa("Auto", TARGET), factor), max_cpu_boost=two)
    assert resources(result)["requests"]["cpu"] == "2"  # not 3
    assert resources(result)["limits"]["cpu"] == "4"  # 6 x 2 / 3: the ratio kept
    assert resources(result, 1)["requests"]["cpu"] == "150m"  # under the cap
    half = Quantity.parse("500m")  # below app's 1 core: no boost for it at all
    result = patched(pod(APP, SIDECAR), boosting(vpa("Auto", TARGET), factor), max_cpu_boost=half)
    assert resources(result)["requests"]["cpu"] == "1"
    boost = json.loads(result["metadata"]["annotations"][BOOST_ANNOTATION])
    assert list(boost["containers"]) == ["sidecar"]


def test_a_startup_boost_stays_within_the_container_limitrange_max() -> None:
    """The API server would refuse a pod past its LimitRange's max: the boost stops there."""
    factor = {"type": "Factor", "factor": 3}
    ceiling = limit_range({"type": "Container", "max": {"cpu": "3"}})
    result = patched(pod(APP), boosting(vpa("Auto", TARGET), factor), [ceiling])
    # 3 x (1 request, 2 limit) would be 3 / 6: the limit meets the max, the request in step
    assert resources(result)["limits"]["cpu"] == "3"
    assert resources(result)["requests"]["cpu"] == "1500m"
    low = limit_range({"type": "Container", "max": {"cpu": "2"}})  # no room above 1 core
    unboosted = patched(pod(APP), boosting(vpa("Auto", TARGET), factor), [low])
    assert resources(unboosted)["requests"]["cpu"] == "1"
    assert BOOST_ANNOTATION not in unboosted["metadata"]["annotations"]

    # a Pod LimitRange max: 3 + 150m requests fit 5 cores, 6 of limits do not: no boost
    tight = limit_range({"type": "Pod", "max": {"cpu": "5"}})
    unboosted = patched(pod(APP, SIDECAR), boosting(vpa("Auto", TARGET), factor), [tight])
    assert resources(unboosted)["requests"]["cpu"] == "1"
    assert resources(unboosted)["limits"]["cpu"] == "2"
    roomy = limit_range({"type": "Pod", "max": {"cpu": "7"}})
    boosted = patched(pod(APP, SIDECAR), boosting(vpa("Auto", TARGET), factor), [roomy])
    assert resources(boosted)["limits"]["cpu"] == "6"


def test_under_requests_only_a_boost_stays_just_below_the_containers_cpu_limit() -> None:
    """AEP-7862: RequestsOnly leaves the limit alone, and a request over it is refused."""
    only = {
        "containerName": "app",
        "controlledValues": "RequestsOnly",
        "startupBoost": {"cpu": {"type": "Factor", "factor": 3}},
    }
    found = vpa("Auto", {"app": {"cpu": "500m"}}, [only])
    result = patched(pod(container("app", {"cpu": "250m"}, {"cpu": "1"})), found)
    assert resources(result) == {"requests": {"cpu": "999m"}, "limits": {"cpu": "1"}}
    at_limit = vpa("Auto", {"app": {"cpu": "2"}}, [only])  # capped at the limit: no room
    result = patched(pod(container("app", {"cpu": "250m"}, {"cpu": "1"})), at_limit)
    assert resources(result) == {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}
    assert BOOST_ANNOTATION not in result["metadata"]["annotations"]
