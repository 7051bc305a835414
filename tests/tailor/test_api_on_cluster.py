"""Our CRDs and API models against the real kube-apiserver: what it stores, we read back exactly."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tailor.api import (
    VPA_PLURAL,
    VerticalPodAutoscaler,
    VerticalPodAutoscalerCheckpoint,
)
from tailor.api.crd import API_VERSION, CHECKPOINT_PLURAL
from tests.cluster.crds import install_crds
from tests.cluster.rawapi import JSON_PATCH, RawApi

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def api(kube_cluster: Any) -> Iterator[RawApi]:
    """A client of the real API server with our two CRDs installed and established."""
    with kube_cluster.api_client() as client:
        raw = RawApi(client)
        install_crds(raw)
        yield raw


def _vpa_json(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web", "namespace": namespace, "labels": {"team": "a"}},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate", "minReplicas": 2},
            "resourcePolicy": {
                "containerPolicies": [
                    {"containerName": "*", "minAllowed": {"cpu": "25m", "memory": "64Mi"}},
                    {
                        "containerName": "app",
                        "maxAllowed": {"cpu": "2", "memory": "4Gi"},
                        "controlledResources": ["cpu", "memory"],
                        "controlledValues": "RequestsOnly",
                    },
                    {"containerName": "envoy", "mode": "Off"},
                ]
            },
            "recommenders": [{"name": "kube-tailor"}],
        },
    }


def _vpa_path(namespace: str, name: str = "", subresource: str = "") -> str:
    path = f"/apis/{API_VERSION}/namespaces/{namespace}/{VPA_PLURAL}"
    if name:
        path += f"/{name}"
    return f"{path}/{subresource}" if subresource else path


def test_vpa_written_by_our_model_reads_back_equal(api: RawApi, kube_namespace: str) -> None:
    sent = VerticalPodAutoscaler.from_api(_vpa_json(kube_namespace))
    stored = api.create(_vpa_path(kube_namespace), sent.to_api())
    read = VerticalPodAutoscaler.from_api(api.get(_vpa_path(kube_namespace, "web")))
    assert read.spec == sent.spec
    assert read.metadata.creation_timestamp is not None
    assert read.to_api()["metadata"]["uid"] == stored["metadata"]["uid"]
    # What the server returns round-trips through our model unchanged.
    assert VerticalPodAutoscaler.from_api(stored).to_api() == stored


def test_status_recommendation_goes_through_the_status_subresource(
    api: RawApi, kube_namespace: str
) -> None:
    api.create(_vpa_path(kube_namespace), _vpa_json(kube_namespace))
    current = VerticalPodAutoscaler.from_api(api.get(_vpa_path(kube_namespace, "web")))
    status = {
        "recommendation": {
            "containerRecommendations": [
                {
                    "containerName": "app",
                    "target": {"cpu": "587m", "memory": "262144k"},
                    "lowerBound": {"cpu": "100m", "memory": "131072k"},
                    "upperBound": {"cpu": "1200m", "memory": "1Gi"},
                    "uncappedTarget": {"cpu": "587m", "memory": "262144k"},
                }
            ]
        },
        "conditions": [
            {
                "type": "RecommendationProvided",
                "status": "True",
                "lastTransitionTime": "2026-01-02T03:04:05Z",
            }
        ],
    }
    body = current.to_api()
    body["status"] = status
    updated = api.replace(_vpa_path(kube_namespace, "web", "status"), body)
    model = VerticalPodAutoscaler.from_api(updated)
    recommendation = model.recommendation()
    assert recommendation is not None
    app = recommendation.for_container("app")
    assert app is not None
    assert app.target.cpu_cores() == pytest.approx(0.587)
    assert app.upper_bound is not None
    assert app.upper_bound.memory_bytes() == 2**30
    assert model.to_api()["status"] == status
    # A write to the main resource cannot change status (the subresource owns it).
    body = model.to_api()
    body["status"] = {}
    after = api.replace(_vpa_path(kube_namespace, "web"), body)
    assert after["status"] == status


def test_server_rejects_what_our_schema_forbids(api: RawApi, kube_namespace: str) -> None:
    bad = _vpa_json(kube_namespace)
    bad["spec"]["updatePolicy"]["updateMode"] = "Sometimes"
    with pytest.raises(ApiException) as caught:
        api.create(_vpa_path(kube_namespace), bad)
    assert caught.value.status == 422
    patch = [{"op": "replace", "path": "/spec/updatePolicy/updateMode", "value": "Often"}]
    api.create(_vpa_path(kube_namespace), _vpa_json(kube_namespace))
    with pytest.raises(ApiException) as caught:
        api.patch(_vpa_path(kube_namespace, "web"), patch, content_type=JSON_PATCH)
    assert caught.value.status == 422
    # a startup boost is one kind with its amount (the CRD's CEL rule), its duration a duration
    refused: list[tuple[dict[str, object], str]] = [
        ({"type": "Factor"}, "type Factor takes a factor"),
        ({"type": "Quantity", "quantity": "1", "factor": 2}, "type Quantity a quantity"),
        ({"type": "Factor", "factor": 2, "duration": "soon"}, "should match"),
    ]
    for wrong, words in refused:
        adding: list[dict[str, object]] = [
            {"op": "add", "path": "/spec/startupBoost", "value": {"cpu": wrong}}
        ]
        with pytest.raises(ApiException) as caught:
            api.patch(_vpa_path(kube_namespace, "web"), adding, content_type=JSON_PATCH)
        assert caught.value.status == 422 and words in str(caught.value.body), wrong
    good = {"cpu": {"type": "Quantity", "quantity": "500m", "duration": "1m30s"}}
    added: list[dict[str, object]] = [{"op": "add", "path": "/spec/startupBoost", "value": good}]
    stored = api.patch(_vpa_path(kube_namespace, "web"), added, content_type=JSON_PATCH)
    boost = VerticalPodAutoscaler.from_api(stored).cpu_startup_boost("app")
    assert boost is not None and boost.hold().total_seconds() == 90


def test_checkpoint_round_trip(api: RawApi, kube_namespace: str) -> None:
    checkpoint = {
        "apiVersion": API_VERSION,
        "kind": "VerticalPodAutoscalerCheckpoint",
        "metadata": {"name": "web-app", "namespace": kube_namespace},
        "spec": {"vpaObjectName": "web", "containerName": "app"},
        "status": {
            "lastUpdateTime": "2026-01-02T03:04:05Z",
            "version": "v3",
            "cpuHistogram": {
                "referenceTimestamp": "2026-01-02T00:00:00Z",
                "bucketWeights": {"3": 10000, "17": 512},
                "totalWeight": 12.5,
            },
            "memoryHistogram": {
                "referenceTimestamp": "2026-01-02T00:00:00Z",
                "bucketWeights": {"40": 10000},
                "totalWeight": 3.0,
            },
            "firstSampleStart": "2026-01-01T00:00:00Z",
            "lastSampleStart": "2026-01-02T03:04:00Z",
            "totalSamplesCount": 1440,
        },
    }
    sent = VerticalPodAutoscalerCheckpoint.from_api(checkpoint)
    path = f"/apis/{API_VERSION}/namespaces/{kube_namespace}/{CHECKPOINT_PLURAL}"
    with contextlib.suppress(ApiException):
        api.delete(f"{path}/web-app")
    stored = api.create(path, sent.to_api())
    read = VerticalPodAutoscalerCheckpoint.from_api(api.get(f"{path}/web-app"))
    assert read.status == sent.status
    assert read.to_api()["status"] == stored["status"] == checkpoint["status"]
