"""Typed API objects refuse what the API server or upstream admission refuses, naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from tailor.api import (
    VerticalPodAutoscaler,
    VerticalPodAutoscalerCheckpoint,
)
from tests.tailor.api_objects import REAL_CHECKPOINT, REAL_VPA


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (("spec", "updatePolicy", "updateMode"), "Sometimes", "spec.updatePolicy.updateMode"),
        (("spec", "updatePolicy", "minReplicas"), 0, "spec.updatePolicy.minReplicas"),
        (
            ("spec", "resourcePolicy", "containerPolicies", 0, "minAllowed", "cpu"),
            "lots",
            "spec.resourcePolicy.containerPolicies.0.minAllowed.cpu",
        ),
        (
            ("spec", "resourcePolicy", "containerPolicies", 1, "mode"),
            "Sometimes",
            "spec.resourcePolicy.containerPolicies.1.mode",
        ),
        (
            ("spec", "resourcePolicy", "containerPolicies", 0, "controlledValues"),
            "LimitsOnly",
            "spec.resourcePolicy.containerPolicies.0.controlledValues",
        ),
        (
            ("status", "recommendation", "containerRecommendations", 0, "target", "memory"),
            "1.5.5Gi",
            "status.recommendation.containerRecommendations.0.target.memory",
        ),
        (("status", "conditions", 0, "status"), "Maybe", "status.conditions.0.status"),
        (("metadata", "creationTimestamp"), "yesterday", "metadata.creationTimestamp"),
        (("metadata", "creationTimestamp"), "2024-05-01T10:00:00", "metadata.creationTimestamp"),
    ],
)
def test_invalid_values_raise_a_validation_error_at_the_field(
    path: tuple[str | int, ...], value: object, where: str
) -> None:
    data = copy.deepcopy(REAL_VPA)
    node: Any = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ValidationError) as caught:
        VerticalPodAutoscaler.from_api(data)
    assert where in str(caught.value)


def test_bad_quantity_error_names_the_string() -> None:
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["resourcePolicy"]["containerPolicies"][0]["maxAllowed"] = {"memory": "4GB"}
    with pytest.raises(ValidationError, match="invalid quantity '4GB'"):
        VerticalPodAutoscaler.from_api(data)


@pytest.mark.parametrize(
    ("path", "where"),
    [
        (("spec", "resourcePolicy", "containerPolicies", 0, "maxAllowed"), "maxAllowed"),
        (("spec", "resourcePolicy", "containerPolicies", 0, "minAllowed"), "minAllowed"),
        (("status", "recommendation", "containerRecommendations", 0, "target"), "target"),
    ],
)
def test_negative_amounts_are_refused(path: tuple[str | int, ...], where: str) -> None:
    # A negative maxAllowed used to cap every recommendation below zero, silently.
    data = copy.deepcopy(REAL_VPA)
    node: Any = data
    for key in path:
        node = node[key]
    node["cpu"] = "-100m"
    with pytest.raises(ValidationError, match=r"cpu: -100m is negative") as caught:
        VerticalPodAutoscaler.from_api(data)
    assert where in str(caught.value)


@pytest.mark.parametrize(
    ("policy", "problem"),
    [
        ({"minAllowed": {"cpu": "2"}, "maxAllowed": {"cpu": "1"}}, "minAllowed cpu 2 is above"),
        ({"minAllowed": {"cpu": "500u"}}, "whole number of milli CPUs"),
        ({"maxAllowed": {"memory": "500m"}}, "whole number of bytes"),
        ({"controlledResources": ["cpu", "gpu"]}, r"controlledResources \['gpu'\]"),
        ({"mode": "Off", "controlledValues": "RequestsAndLimits"}, "mode is Off"),
        ({"oomBumpUpRatio": "0.5"}, "oomBumpUpRatio 500m is less than 1"),
        ({"oomMinBumpUp": "-1Mi"}, "oomMinBumpUp -1Mi is negative"),
    ],
)
def test_container_policies_upstream_refuses_are_refused(
    policy: dict[str, Any], problem: str
) -> None:
    # minAllowed above maxAllowed used to let max win silently, "500u" gave sub-millicore
    # recommendations and "gpu" was never recommended for, all without a word.
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["resourcePolicy"]["containerPolicies"] = [{"containerName": "app", **policy}]
    with pytest.raises(ValidationError, match=problem) as caught:
        VerticalPodAutoscaler.from_api(data)
    assert "spec.resourcePolicy.containerPolicies.0" in str(caught.value)


def test_a_container_policy_needs_a_container_name() -> None:
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["resourcePolicy"]["containerPolicies"].append({"mode": "Off"})
    with pytest.raises(ValidationError, match=r"containerPolicies\[3\]\.containerName"):
        VerticalPodAutoscaler.from_api(data)


def test_at_most_one_recommender_may_be_named() -> None:
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["recommenders"] = [{"name": "a"}, {"name": "b"}]
    with pytest.raises(ValidationError, match=r"spec\.recommenders"):
        VerticalPodAutoscaler.from_api(data)


def test_target_ref_is_required() -> None:
    with pytest.raises(ValidationError, match=r"spec\.targetRef"):
        VerticalPodAutoscaler.from_api({"spec": {}})


def test_checkpoint_weights_are_validated() -> None:
    for weights in ({"-1": 5}, {"x": 5}, {"0": -1}, {"0": 2**32}):
        data = copy.deepcopy(REAL_CHECKPOINT)
        data["status"]["cpuHistogram"]["bucketWeights"] = weights
        with pytest.raises(ValidationError, match="bucketWeights"):
            VerticalPodAutoscalerCheckpoint.from_api(data)


@pytest.mark.parametrize("total", [-1.0, float("nan"), float("inf"), "NaN"])
def test_checkpoint_total_weight_must_be_finite_and_non_negative(total: object) -> None:
    data = copy.deepcopy(REAL_CHECKPOINT)
    data["status"]["memoryHistogram"]["totalWeight"] = total
    with pytest.raises(ValidationError, match=r"memoryHistogram\.totalWeight"):
        VerticalPodAutoscalerCheckpoint.from_api(data)


def _checkpoint_with(path: tuple[str, ...], value: object) -> dict[str, Any]:
    data = copy.deepcopy(REAL_CHECKPOINT)
    node: Any = data["status"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (("cpuHistogram", "bucketWeights"), {"3": "5"}, "cpuHistogram.bucketWeights.3"),
        (("cpuHistogram", "bucketWeights"), {"3": True}, "cpuHistogram.bucketWeights.3"),
        (("cpuHistogram", "bucketWeights"), {" 3": 5}, "cpuHistogram.bucketWeights. 3.[key]"),
        (("cpuHistogram", "bucketWeights"), {"3.0": 5}, "cpuHistogram.bucketWeights.`3.0`.[key]"),
        (("cpuHistogram", "bucketWeights"), {"1_0": 5}, "cpuHistogram.bucketWeights.1_0.[key]"),
        (("memoryHistogram", "totalWeight"), "3.0", "memoryHistogram.totalWeight"),
        (("memoryHistogram", "totalWeight"), True, "memoryHistogram.totalWeight"),
        (("totalSamplesCount",), "1440", "totalSamplesCount"),
        (("totalSamplesCount",), True, "totalSamplesCount"),
        (("lastUpdateTime",), 1714644000, "lastUpdateTime"),
        (("lastUpdateTime",), "2024-05-02 10:00:00Z", "lastUpdateTime"),
        (("lastUpdateTime",), "2024-05-02t10:00:00z", "lastUpdateTime"),
        (("firstSampleStart",), "2024-05-01T10:00Z", "firstSampleStart"),
        (("cpuHistogram", "referenceTimestamp"), 0, "cpuHistogram.referenceTimestamp"),
    ],
)
def test_checkpoint_values_go_could_not_decode_are_refused(
    path: tuple[str, ...], value: object, where: str
) -> None:
    """Upstream's types are map[int]uint32, float64, int and metav1.Time, and Go's decoder
    is strict: pydantic's lax mode took numeric strings, booleans as 1, "1_0" as a bucket
    index and a number as a UNIX time, all of which upstream's recommender refuses."""
    with pytest.raises(ValidationError) as caught:
        VerticalPodAutoscalerCheckpoint.from_api(_checkpoint_with(path, value))
    assert f"status.{where}\n" in str(caught.value)


@pytest.mark.parametrize("unset", ["", "0001-01-01T00:00:00Z"])
def test_empty_and_zero_times_read_as_unset(unset: str) -> None:
    """Both are Go's zero time, which metav1.Time writes as null: we leave it out."""
    read = VerticalPodAutoscalerCheckpoint.from_api(_checkpoint_with(("lastUpdateTime",), unset))
    assert read.status is not None and read.status.last_update_time is None
    assert "lastUpdateTime" not in read.to_api()["status"]


def test_a_list_is_sorted_into_objects_and_named_reasons_for_the_rest() -> None:
    """A service skips a malformed VPA, not the list, and says which and why."""
    bad = copy.deepcopy(REAL_VPA)
    del bad["spec"]["targetRef"]
    odd: Any = "not an object"  # a list from a misbehaving server
    valid, invalid = VerticalPodAutoscaler.sorted_out([REAL_VPA, bad, odd])
    assert [v.name for v in valid] == [REAL_VPA["metadata"]["name"]]
    namespace, name = REAL_VPA["metadata"]["namespace"], REAL_VPA["metadata"]["name"]
    assert invalid[0] == f"{namespace}/{name}: spec.targetRef: Field required"
    assert invalid[1].startswith("/: ")
    assert VerticalPodAutoscaler.valid_among([REAL_VPA, bad]) == valid
