"""Pods, VPAs and LimitRanges as the API server sends them, and a JSON Patch applier."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from tailor.api import LimitRange, VerticalPodAutoscaler

Json = dict[str, Any]


def container(name: str, requests: Json | None = None, limits: Json | None = None) -> Json:
    resources: Json = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": resources}


def pod(*containers: Json, annotations: Json | None = None, owner: str | None = "web-5d9") -> Json:
    metadata: Json = {"generateName": "web-5d9-", "namespace": "shop", "labels": {"app": "web"}}
    if annotations is not None:
        metadata["annotations"] = annotations
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": owner,
                "uid": "u1",
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": list(containers)},
    }


def vpa(
    mode: str | None = "Auto",
    targets: Mapping[str, Json] | None = None,
    policies: Iterable[Json] = (),
    name: str = "web",
    target_name: str = "web",
    created: str | None = None,
) -> VerticalPodAutoscaler:
    spec: Json = {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target_name}}
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    if policies:
        spec["resourcePolicy"] = {"containerPolicies": list(policies)}
    metadata: Json = {"name": name, "namespace": "shop"}
    if created is not None:
        metadata["creationTimestamp"] = created
    document: Json = {"metadata": metadata, "spec": spec}
    if targets is not None:
        recommendations = [{"containerName": c, "target": t} for c, t in targets.items()]
        document["status"] = {"recommendation": {"containerRecommendations": recommendations}}
    return VerticalPodAutoscaler.from_api(document)


def limit_range(*items: Json) -> LimitRange:
    return LimitRange.from_api(
        {"metadata": {"name": "limits", "namespace": "shop"}, "spec": {"limits": list(items)}}
    )


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply_patch(document: Json, operations: Iterable[Mapping[str, Any]]) -> Json:
    """RFC 6902 `add` as the API server applies it: the parent must already exist."""
    result = copy.deepcopy(document)
    for operation in operations:
        assert operation["op"] == "add", operation
        *parents, last = [_unescape(t) for t in operation["path"].split("/")[1:]]
        target: Any = result
        for token in parents:
            target = target[int(token)] if isinstance(target, list) else target[token]
        assert isinstance(target, dict), f"{operation['path']}: parent is not an object"
        target[last] = copy.deepcopy(operation["value"])
    return result


APP_TARGETS = {"app": {"cpu": "1", "memory": "200Mi"}}
