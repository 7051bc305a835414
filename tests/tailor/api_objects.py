"""Real API objects, as a cluster returns them, shared by the API model tests."""

from __future__ import annotations

from typing import Any

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
