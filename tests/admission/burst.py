"""The objects of a burst of pod creations, as the benchmark and the chaos suite send it.

`populate` makes `apps` Deployments, each with a ReplicaSet (objects only: no
controller needs to run) and a VPA with a recommendation; `review_body` is the
AdmissionReview the API server sends for a new pod of one of those ReplicaSets.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.cluster.rawapi import MERGE_PATCH, RawApi
from tests.cluster.workloads import vpa_collection

NAMESPACE = "burst"


def container() -> dict[str, Any]:
    resources = {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"memory": "200Mi"}}
    return {"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": resources}


def owner(kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": True}


def populate(api: RawApi, apps: int, namespace: str = NAMESPACE) -> None:
    """The namespace, and per app a Deployment, its ReplicaSet `<app>-rs` and a VPA."""
    api.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    for index in range(apps):
        app = f"app{index}"
        labels = {"app": app}
        template = {"metadata": {"labels": labels}, "spec": {"containers": [container()]}}
        spec = {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}
        deployment = api.create(
            f"/apis/apps/v1/namespaces/{namespace}/deployments",
            {"metadata": {"name": app}, "spec": spec},
        )
        link = owner("Deployment", app, deployment["metadata"]["uid"])
        api.create(
            f"/apis/apps/v1/namespaces/{namespace}/replicasets",
            {"metadata": {"name": f"{app}-rs", "ownerReferences": [link]}, "spec": spec},
        )
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": app}
        vpa = {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": {"name": app},
            "spec": {"targetRef": target, "updatePolicy": {"updateMode": "Recreate"}},
        }
        api.create(vpa_collection(namespace), vpa)
        recommendation = {"containerName": "app", "target": {"cpu": "300m", "memory": "300Mi"}}
        status = {"status": {"recommendation": {"containerRecommendations": [recommendation]}}}
        api.patch(f"{vpa_collection(namespace)}/{app}/status", status, MERGE_PATCH)


def review_body(index: int, replica_set: str | None = None, namespace: str = NAMESPACE) -> bytes:
    """The AdmissionReview of a new pod of app`index` (owned by `replica_set`, default
    its own `<app>-rs`)."""
    app = f"app{index}"
    replica_set = replica_set or f"{app}-rs"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{replica_set}-",
            "namespace": namespace,
            "labels": {"app": app},
            "ownerReferences": [owner("ReplicaSet", replica_set, str(uuid.uuid4()))],
        },
        "spec": {"containers": [container()]},
    }
    kind = {"group": "", "version": "v1", "kind": "Pod"}
    resource = {"group": "", "version": "v1", "resource": "pods"}
    request = {
        "uid": str(uuid.uuid4()),
        "kind": kind,
        "resource": resource,
        "requestKind": kind,  # upstream's webhook reads these (the API server always sends them)
        "requestResource": resource,
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
        "dryRun": False,
        "namespace": namespace,
        "operation": "CREATE",
        "object": pod,
    }
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(review).encode()
