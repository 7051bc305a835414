"""Typed API objects: exact JSON round trips, validation errors, helpers."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
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
from tailor.quantity import Quantity, parse_quantity
from tests.tailor.api_objects import REAL_CHECKPOINT, REAL_VPA


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
    data["spec"]["pausedBy"] = {"name": "mpa"}
    data["spec"]["resourcePolicy"]["containerPolicies"][0]["targetCPUPercentile"] = "0.95"
    data["status"]["observedGeneration"] = 3
    vpa = VerticalPodAutoscaler.from_api(data)
    assert vpa.spec.model_extra == {"pausedBy": {"name": "mpa"}}
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


@pytest.mark.parametrize(
    ("boost", "message"),
    [
        ({"type": "Factor"}, "needs a factor >= 1"),
        ({"type": "Factor", "factor": 0}, "needs a factor >= 1"),
        ({"type": "Factor", "factor": 2, "quantity": "1"}, "no quantity"),
        ({"type": "Quantity", "quantity": "0"}, "needs a quantity > 0"),
        ({"type": "Quantity", "quantity": "500m", "factor": 2}, "no factor"),
        ({"type": "Factor", "factor": 2, "duration": "soon"}, "duration: invalid duration"),
        ({"type": "Double", "factor": 2}, "Factor"),
    ],
)
def test_a_startup_boost_is_one_kind_with_its_amount(boost: dict, message: str) -> None:
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["startupBoost"] = {"cpu": boost}
    with pytest.raises(ValidationError, match=message):
        VerticalPodAutoscaler.from_api(data)


def test_a_containers_own_startup_boost_wins_over_the_vpas() -> None:
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["startupBoost"] = {"cpu": {"type": "Factor", "factor": 3, "duration": "10s"}}
    policy = data["spec"]["resourcePolicy"]["containerPolicies"][2]  # worker
    name = policy["containerName"]
    policy["startupBoost"] = {"cpu": {"type": "Quantity", "quantity": "500m"}}
    vpa = VerticalPodAutoscaler.from_api(data)
    own, shared = vpa.cpu_startup_boost(name), vpa.cpu_startup_boost("not-in-any-policy")
    quarter = Quantity.parse("250m")
    assert own is not None and own.boosted(quarter) == Quantity.parse("750m")
    assert own.hold() == timedelta(0)
    assert shared is not None and shared.boosted(quarter) == Quantity.parse("750m")
    assert shared.hold() == timedelta(seconds=10)
    assert vpa.to_api() == data
