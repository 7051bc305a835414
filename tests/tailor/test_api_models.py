"""Typed API objects: exact JSON round trips, validation errors, helpers."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from tailor.api import (
    API_VERSION,
    CHECKPOINT_PLURAL,
    GROUP,
    VERSION,
    VPA_PLURAL,
    ConditionStatus,
    ContainerScalingMode,
    ControlledValues,
    RecommendedContainerResources,
    ResourceList,
    UpdateMode,
    VerticalPodAutoscaler,
    VerticalPodAutoscalerCheckpoint,
    VerticalPodAutoscalerList,
    checkpoint_name,
)
from tailor.quantity import parse_quantity

# A VPA as the API server returns it after kubectl apply and a recommender pass.
REAL_VPA: dict[str, Any] = {
    "apiVersion": "autoscaling.k8s.io/v1",
    "kind": "VerticalPodAutoscaler",
    "metadata": {
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"..."}\n'
        },
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "generation": 3,
        "labels": {"app": "web"},
        "managedFields": [
            {
                "apiVersion": "autoscaling.k8s.io/v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:targetRef": {}}},
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "time": "2024-05-01T10:00:00Z",
            }
        ],
        "name": "web",
        "namespace": "shop",
        "resourceVersion": "81234",
        "uid": "2c5b7f0e-4c1a-4d0f-9a0e-6b1f3f1c2d3e",
    },
    "spec": {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "updatePolicy": {
            "updateMode": "InPlaceOrRecreate",
            "minReplicas": 2,
            "evictionRequirements": [
                {"resources": ["cpu", "memory"], "changeRequirement": "TargetHigherThanRequests"}
            ],
        },
        "resourcePolicy": {
            "containerPolicies": [
                {
                    "containerName": "*",
                    "minAllowed": {"cpu": "25m", "memory": "50Mi"},
                    "maxAllowed": {"cpu": "2", "memory": "4Gi"},
                    "controlledResources": ["cpu", "memory"],
                    "controlledValues": "RequestsAndLimits",
                },
                {"containerName": "istio-proxy", "mode": "Off"},
                {"containerName": "worker", "controlledValues": "RequestsOnly"},
            ]
        },
        "recommenders": [{"name": "tailor"}],
    },
    "status": {
        "conditions": [
            {
                "lastTransitionTime": "2024-05-01T10:01:00Z",
                "status": "True",
                "type": "RecommendationProvided",
            }
        ],
        "recommendation": {
            "containerRecommendations": [
                {
                    "containerName": "app",
                    "lowerBound": {"cpu": "25m", "memory": "262144k"},
                    "target": {"cpu": "587m", "memory": "262144k"},
                    "uncappedTarget": {"cpu": "587m", "memory": "262144k"},
                    "upperBound": {"cpu": "2", "memory": "4Gi"},
                }
            ]
        },
    },
}

REAL_CHECKPOINT: dict[str, Any] = {
    "apiVersion": "autoscaling.k8s.io/v1",
    "kind": "VerticalPodAutoscalerCheckpoint",
    "metadata": {
        "creationTimestamp": "2024-05-01T10:02:00Z",
        "name": "web-app",
        "namespace": "shop",
        "resourceVersion": "81300",
        "uid": "9d7c3a1e-0000-4000-8000-000000000001",
    },
    "spec": {"containerName": "app", "vpaObjectName": "web"},
    "status": {
        "cpuHistogram": {
            "bucketWeights": {"0": 10000, "3": 421, "17": 9},
            "referenceTimestamp": "2024-05-02T00:00:00Z",
            "totalWeight": 12.75,
        },
        "firstSampleStart": "2024-05-01T10:00:00Z",
        "lastSampleStart": "2024-05-02T09:59:00Z",
        "lastUpdateTime": "2024-05-02T10:00:00Z",
        "memoryHistogram": {
            "bucketWeights": {"41": 10000},
            "referenceTimestamp": "2024-05-03T00:00:00Z",
            "totalWeight": 3.0,
        },
        "totalSamplesCount": 1440,
        "version": "v3",
    },
}


def test_crd_names() -> None:
    assert (GROUP, VERSION, API_VERSION) == ("autoscaling.k8s.io", "v1", "autoscaling.k8s.io/v1")
    assert VPA_PLURAL == "verticalpodautoscalers"
    assert CHECKPOINT_PLURAL == "verticalpodautoscalercheckpoints"


def test_real_vpa_round_trips_exactly() -> None:
    vpa = VerticalPodAutoscaler.from_api(copy.deepcopy(REAL_VPA))
    assert vpa.model_dump(by_alias=True, exclude_none=True) == REAL_VPA
    assert vpa.to_api() == REAL_VPA
    assert json.loads(json.dumps(vpa.to_api())) == REAL_VPA


def test_real_checkpoint_round_trips_exactly() -> None:
    checkpoint = VerticalPodAutoscalerCheckpoint.from_api(copy.deepcopy(REAL_CHECKPOINT))
    assert checkpoint.model_dump(by_alias=True, exclude_none=True) == REAL_CHECKPOINT
    assert checkpoint.to_api() == REAL_CHECKPOINT
    status = checkpoint.status
    assert status is not None and status.cpu_histogram is not None
    assert status.cpu_histogram.bucket_weights == {0: 10000, 3: 421, 17: 9}
    assert status.last_update_time == datetime(2024, 5, 2, 10, 0, tzinfo=UTC)


def test_typed_access_to_a_real_vpa() -> None:
    vpa = VerticalPodAutoscaler.from_api(REAL_VPA)
    assert vpa.name == "web" and vpa.namespace == "shop"
    assert vpa.metadata.creation_timestamp == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert vpa.spec.target_ref.kind == "Deployment"
    assert vpa.effective_update_mode() is UpdateMode.IN_PLACE_OR_RECREATE
    assert vpa.recommender_names() == ["tailor"]
    recommendation = vpa.recommendation()
    assert recommendation is not None
    app = recommendation.for_container("app")
    assert app is not None
    assert app.target.cpu_cores() == 0.587
    assert app.target.memory_bytes() == 262144000.0
    assert recommendation.for_container("missing") is None
    assert vpa.status is not None
    condition = vpa.status.condition("RecommendationProvided")
    assert condition is not None and condition.status is ConditionStatus.TRUE


def test_named_container_policy_wins_over_the_wildcard() -> None:
    vpa = VerticalPodAutoscaler.from_api(REAL_VPA)
    proxy = vpa.container_policy("istio-proxy")
    assert proxy is not None and proxy.is_off and proxy.mode is ContainerScalingMode.OFF
    other = vpa.container_policy("sidecar")
    assert other is not None and other.container_name == "*"
    assert other.min_allowed == ResourceList(cpu="25m", memory="50Mi")
    worker = vpa.container_policy("worker")
    assert worker is not None
    assert worker.effective_controlled_values() is ControlledValues.REQUESTS_ONLY
    assert worker.effective_controlled_resources() == ("cpu", "memory")  # the default
    assert worker.min_allowed is None  # the named entry replaces "*" entirely


@pytest.mark.parametrize(
    ("mode", "effective"),
    [
        (None, UpdateMode.RECREATE),
        ("Auto", UpdateMode.RECREATE),
        ("Off", UpdateMode.OFF),
        ("Initial", UpdateMode.INITIAL),
        ("InPlace", UpdateMode.IN_PLACE),
    ],
)
def test_effective_update_mode(mode: str | None, effective: UpdateMode) -> None:
    spec: dict[str, Any] = {"targetRef": {"kind": "Deployment", "name": "web"}}
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    assert VerticalPodAutoscaler.from_api({"spec": spec}).effective_update_mode() is effective


def test_unknown_fields_are_kept_through_a_round_trip() -> None:
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["startupBoost"] = {"cpu": {"type": "Factor", "factor": 2}}
    data["spec"]["resourcePolicy"]["containerPolicies"][0]["targetCPUPercentile"] = "0.95"
    data["status"]["observedGeneration"] = 3
    vpa = VerticalPodAutoscaler.from_api(data)
    assert vpa.spec.model_extra == {"startupBoost": {"cpu": {"type": "Factor", "factor": 2}}}
    assert vpa.to_api() == data


def test_non_canonical_quantities_are_written_in_canonical_form() -> None:
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["resourcePolicy"]["containerPolicies"][0]["minAllowed"] = {
        "cpu": 0.5,
        "memory": "0.5Gi",
    }
    written = VerticalPodAutoscaler.from_api(data).to_api()
    assert written["spec"]["resourcePolicy"]["containerPolicies"][0]["minAllowed"] == {
        "cpu": "500m",
        "memory": "512Mi",
    }


def test_null_timestamps_read_as_unset_and_are_left_out() -> None:
    data = copy.deepcopy(REAL_CHECKPOINT)
    data["status"]["memoryHistogram"] = {"referenceTimestamp": None}
    checkpoint = VerticalPodAutoscalerCheckpoint.from_api(data)
    assert checkpoint.to_api()["status"]["memoryHistogram"] == {}


def test_timestamps_are_written_in_utc_seconds() -> None:
    data = copy.deepcopy(REAL_CHECKPOINT)
    data["status"]["lastUpdateTime"] = "2024-05-02T12:00:00.75+02:00"
    written = VerticalPodAutoscalerCheckpoint.from_api(data).to_api()
    assert written["status"]["lastUpdateTime"] == "2024-05-02T10:00:00Z"


def test_objects_built_in_code_serialize_to_api_json() -> None:
    vpa = VerticalPodAutoscaler.model_validate(
        {"spec": {"target_ref": {"kind": "StatefulSet", "name": "db"}}}
    )
    vpa.metadata.name = "db"
    recommendation = RecommendedContainerResources(
        container_name="db", target=ResourceList.from_amounts(cpu_cores=0.0251, memory_bytes=2**28)
    )
    assert recommendation.to_api() == {
        "containerName": "db",
        "target": {"cpu": "26m", "memory": "268435456"},
    }
    assert vpa.to_api() == {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "db"},
        "spec": {"targetRef": {"kind": "StatefulSet", "name": "db"}},
    }
    assert yaml.safe_load(yaml.safe_dump(vpa.to_api())) == vpa.to_api()


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


def test_checkpoint_name_is_vpa_then_container() -> None:
    assert checkpoint_name("web", "app") == "web-app"


def test_vpa_list_items_parse() -> None:
    listing = VerticalPodAutoscalerList.from_api(
        {
            "apiVersion": API_VERSION,
            "kind": "VerticalPodAutoscalerList",
            "metadata": {"resourceVersion": "1"},
            "items": [REAL_VPA],
        }
    )
    assert [vpa.name for vpa in listing.items] == ["web"]


def test_resource_list_helpers() -> None:
    resources = ResourceList({"cpu": "1500m"}, memory="1Gi")
    assert resources.cpu_cores() == 1.5
    assert resources.memory_bytes() == 2.0**30
    assert ResourceList().cpu_cores() is None and ResourceList().memory_bytes() is None
    assert resources.to_api() == {"cpu": "1500m", "memory": "1Gi"}
    assert ResourceList.from_amounts(memory_bytes=100.5).to_api() == {"memory": "101"}


def test_quantity_equality_inside_models() -> None:
    first = RecommendedContainerResources.model_validate({"target": {"memory": "1Gi"}})
    second = RecommendedContainerResources.model_validate({"target": {"memory": 2**30}})
    assert first == second
    assert second.target["memory"] == parse_quantity("1024Mi")
