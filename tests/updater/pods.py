"""Pods, nodes and conditions as the API server returns them (plain JSON dicts)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Obj = dict[str, Any]


def container(
    name: str,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    **extra: Any,
) -> Obj:
    """A container spec; `extra` adds fields such as restartPolicy."""
    resources: Obj = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    return {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": resources, **extra}


def container_status(
    name: str,
    requests: Mapping[str, str] | None = None,
    allocated: Mapping[str, str] | None = None,
) -> Obj:
    """A containerStatuses[] entry: applied requests and the kubelet's allocated ones."""
    status: Obj = {"name": name, "ready": True, "restartCount": 0}
    if requests is not None:
        status["resources"] = {"requests": dict(requests)}
    if allocated is not None:
        status["allocatedResources"] = dict(allocated)
    return status


def condition(
    kind: str,
    reason: str = "",
    observed: int | None = None,
    since: str = "2024-05-01T10:00:00Z",
    message: str = "",
    status: str = "True",
) -> Obj:
    found: Obj = {"type": kind, "status": status, "lastTransitionTime": since}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    if observed is not None:
        found["observedGeneration"] = observed
    return found


def pod(
    containers: Iterable[Obj],
    *,
    name: str = "web-1",
    uid: str | None = None,
    init: Iterable[Obj] = (),
    statuses: Iterable[Obj] = (),
    conditions: Iterable[Obj] = (),
    generation: int | None = 1,
    overhead: Mapping[str, str] | None = None,
    phase: str = "Running",
    node: str = "node-a",
) -> Obj:
    metadata: Obj = {"name": name, "namespace": "shop", "uid": uid or f"uid-{name}"}
    if generation is not None:
        metadata["generation"] = generation
    spec: Obj = {"nodeName": node, "containers": list(containers)}
    init_list = list(init)
    if init_list:
        spec["initContainers"] = init_list
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    status: Obj = {"phase": phase, "conditions": list(conditions)}
    status_list = list(statuses)
    if status_list:
        status["containerStatuses"] = status_list
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def node(name: str = "node-a", cpu: str = "4", memory: str = "8Gi") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
        },
    }
