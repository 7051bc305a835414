"""Small helpers for tests that create, resize and inspect pods on the real API server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.cluster.rawapi import Json, RawApi, pod_path
from tests.cluster.waiting import wait_until


def container_resources(requests: dict[str, str] | None, limits: dict[str, str] | None) -> Json:
    """A container's `resources`, with only the parts that are given."""
    resources: Json = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return resources


def init_container(
    name: str,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    sidecar: bool = True,
) -> Json:
    """An init container; a native sidecar (restartPolicy Always) unless `sidecar` is off."""
    body: Json = {"name": name, "image": "registry.k8s.io/pause:3.10"}
    if sidecar:
        body["restartPolicy"] = "Always"
    body["resources"] = container_resources(requests, limits)
    return body


def pod_manifest(
    name: str,
    *,
    node: str | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    container: str = "app",
    labels: dict[str, str] | None = None,
    priority_class: str | None = None,
    resize_policy: list[dict[str, str]] | None = None,
) -> Json:
    """A one-container pod; `node` binds it directly (no scheduler needed)."""
    resources = container_resources(requests, limits)
    spec: Json = {
        "containers": [
            {"name": container, "image": "registry.k8s.io/pause:3.10", "resources": resources}
        ],
        "terminationGracePeriodSeconds": 30,
    }
    if resize_policy:
        spec["containers"][0]["resizePolicy"] = resize_policy
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": spec,
    }


def create_pod(api: RawApi, namespace: str, manifest: Json) -> Json:
    return dict(api.create(f"/api/v1/namespaces/{namespace}/pods", manifest))


def get_pod(api: RawApi, namespace: str, name: str) -> Json:
    return dict(api.get(pod_path(namespace, name)))


def resize(
    api: RawApi,
    namespace: str,
    name: str,
    *,
    container: str = "app",
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
) -> Json:
    """PATCH pods/{name}/resize with a strategic merge patch of one container."""
    resources = container_resources(requests, limits)
    body = {"spec": {"containers": [{"name": container, "resources": resources}]}}
    return dict(api.patch(pod_path(namespace, name, "resize"), body))


def condition(pod: Json, kind: str) -> Json | None:
    """The pod condition of type `kind`, if present."""
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == kind), None)


def container_status(pod: Json, name: str = "app") -> Json:
    statuses = pod["status"].get("containerStatuses") or []
    return dict(next((s for s in statuses if s["name"] == name), {}))


def applied_requests(pod: Json, name: str = "app") -> Any:
    """status.containerStatuses[].resources.requests (what the kubelet applied)."""
    return (container_status(pod, name).get("resources") or {}).get("requests")


def allocated(pod: Json, name: str = "app") -> Any:
    return container_status(pod, name).get("allocatedResources")


def wait_for_pod(
    api: RawApi,
    namespace: str,
    name: str,
    predicate: Callable[[Json], object],
    *,
    what: str,
    timeout: float = 15.0,
) -> Json:
    """Poll the pod until `predicate(pod)` holds; returns that pod."""

    def probe() -> Json | None:
        pod = get_pod(api, namespace, name)
        return pod if predicate(pod) else None

    return wait_until(probe, timeout=timeout, what=f"{namespace}/{name}: {what}")


def required_condition(pod: Json, kind: str) -> Json:
    """The condition of type `kind`; fails the test when it is missing."""
    found = condition(pod, kind)
    assert found is not None, f"pod has no {kind} condition: {pod['status'].get('conditions')}"
    return found
