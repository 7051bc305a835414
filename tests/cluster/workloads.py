"""Objects the component tests create: Deployments pinned to a test's node, VPAs, histories.

Each test registers its own simulated node with the label `tailor-test=<node>` and
pins its Deployments there, so tests sharing a cluster never schedule onto each
other's nodes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data.schema import validate_usage
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.waiting import wait_until

VPA_API = "/apis/autoscaling.k8s.io/v1"
Mi = 2**20
BURSTABLE = {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}


def deployment(
    name: str, node: str | None, resources: Json | None = None, replicas: int = 1
) -> Json:
    """A Deployment of pause containers named `app`, on the node labelled `tailor-test=node`
    (anywhere the scheduler likes when `node` is None)."""
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": resources or BURSTABLE,
    }
    labels = {"app": name}
    spec: Json = {"containers": [container]}
    if node is not None:
        spec["nodeSelector"] = {"tailor-test": node}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def create_deployment(api: RawApi, namespace: str, manifest: Json) -> None:
    api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", manifest)


def vpa(
    name: str,
    target: str,
    *,
    mode: str = "Off",
    recommender: str | None = None,
    policy: Json | None = None,
) -> Json:
    """A VerticalPodAutoscaler of Deployment `target`; `policy` is one container policy."""
    spec: Json = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "updatePolicy": {"updateMode": mode},
    }
    if recommender:
        spec["recommenders"] = [{"name": recommender}]
    if policy:
        spec["resourcePolicy"] = {"containerPolicies": [policy]}
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name},
        "spec": spec,
    }


def vpa_collection(namespace: str) -> str:
    return f"{VPA_API}/namespaces/{namespace}/verticalpodautoscalers"


def hpa_collection(namespace: str) -> str:
    return f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers"


def hpa(name: str, target: str, *resources: str) -> Json:
    """An autoscaling/v2 HorizontalPodAutoscaler of Deployment `target` on 70 % utilization of
    each of `resources` (none: no spec.metrics, which the API server defaults)."""
    spec: Json = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "minReplicas": 1,
        "maxReplicas": 4,
    }
    if resources:
        target_utilization = {"type": "Utilization", "averageUtilization": 70}
        spec["metrics"] = [
            {"type": "Resource", "resource": {"name": r, "target": target_utilization}}
            for r in resources
        ]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": spec,
    }


def running_pods(api: RawApi, namespace: str) -> list[Json]:
    """The namespace's Running pods that are not being deleted."""
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return [
        p
        for p in pods
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]


def wait_for_running(api: RawApi, namespace: str, count: int, timeout: float = 30) -> list[Json]:
    """Wait until exactly `count` pods of the namespace run; return them."""

    def ready() -> list[Json] | None:
        pods = running_pods(api, namespace)
        return pods if len(pods) == count else None

    return wait_until(ready, timeout=timeout, what=f"{count} pods Running in {namespace}")


def daily_cycle(
    namespace: str, end: int, days: int = 4, step: int = 300, peak_hour: float = 14.0
) -> pd.DataFrame:
    """Deployment `web`'s history: 1.2 cores at `peak_hour` UTC, near 0.1 for the 12 hours
    around the opposite hour ("night"), ~300 MiB."""
    rng = np.random.default_rng(3)
    times = np.arange(end - days * 86400, end, step)
    hours = (times % 86400) / 3600
    cycle = np.clip(np.cos((hours - peak_hour) / 24 * 2 * np.pi), 0, None)
    frame = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(times, unit="s", utc=True),
            "namespace": namespace,
            "workload": "web",
            "pod": "web-7f9c5d-abcde",
            "container": "app",
            "cpu": np.clip(0.1 + 1.1 * cycle + rng.normal(0, 0.03, times.size), 0.01, None),
            "memory": 300.0 * Mi + rng.integers(0, 10 * Mi, times.size),
            "cpu_request": 1.0,
            "memory_request": 512.0 * Mi,
            "cpu_limit": np.nan,
            "memory_limit": np.nan,
        }
    )
    return validate_usage(frame, "written history")
