"""Turn a container's scheduled target into a resize the API server accepts (pure).

The API server refuses (422) a resize that changes the pod's QoS class, removes a
request or limit, or leaves requests above limits. So the plan keeps a
Guaranteed pod's requests equal to its limits, scales every other limit with its
request (the upstream VPA's proportional rule), never adds a resource the
container does not request, and refuses any plan that would move the QoS class.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from updater.resources import Json, format_amount, limits_of, requests_of
from updater.targets import Target


class Qos(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


def qos_of(containers: Sequence[Json]) -> Qos:
    """The QoS class the API server derives from requests and limits of app containers."""
    any_set = False
    guaranteed = True
    for container in containers:
        requests, limits = requests_of(container), limits_of(container)
        any_set = any_set or bool(requests) or bool(limits)
        for resource in ("cpu", "memory"):
            if resource not in limits or requests.get(resource) != limits[resource]:
                guaranteed = False
    if not any_set:
        return Qos.BEST_EFFORT
    return Qos.GUARANTEED if guaranteed else Qos.BURSTABLE


@dataclass(frozen=True)
class ContainerResize:
    """New cpu / memory amounts for one container (millicores, bytes)."""

    name: str
    requests: Mapping[str, int]
    limits: Mapping[str, int]

    def resources(self) -> Json:
        body: dict[str, dict[str, str]] = {}
        if self.requests:
            body["requests"] = {r: format_amount(r, v) for r, v in self.requests.items()}
        if self.limits:
            body["limits"] = {r: format_amount(r, v) for r, v in self.limits.items()}
        return body


@dataclass(frozen=True)
class ResizePlan:
    """What to send to `pods/resize`; empty when the pod already asks for its targets."""

    containers: tuple[ContainerResize, ...]

    @property
    def changes(self) -> bool:
        return bool(self.containers)

    def patch(self) -> Json:
        """A strategic merge patch: containers merge by name, untouched ones stay."""
        items = [{"name": c.name, "resources": c.resources()} for c in self.containers]
        return {"spec": {"containers": items}}

    def describe(self) -> str:
        parts = []
        for container in self.containers:
            amounts = ", ".join(f"{r} {format_amount(r, v)}" for r, v in container.requests.items())
            parts.append(f"{container.name}: {amounts}")
        return "; ".join(parts)


@dataclass(frozen=True)
class Skipped:
    """The pod cannot be resized to its targets; `reason` says why."""

    reason: str


def _wanted(target: Target, qos: Qos) -> dict[str, int]:
    wanted: dict[str, int] = {}
    if target.cpu_cores is not None:
        wanted["cpu"] = max(1, math.ceil(target.cpu_cores * 1000 - 1e-9))
    if target.memory_bytes is not None:
        memory = target.memory_bytes
        if qos is Qos.GUARANTEED and target.memory_limit_bytes is not None:
            memory = max(memory, target.memory_limit_bytes)  # one value is request and limit
        wanted["memory"] = max(1, math.ceil(memory))
    return wanted


def _new_limit(old_request: int, old_limit: int, new_request: int) -> int:
    """Keep the container's limit-to-request ratio, rounding up (never below the request)."""
    return max(new_request, math.ceil(old_limit * new_request / max(old_request, 1)))


def _container_resize(container: Json, target: Target, qos: Qos) -> ContainerResize | None:
    requests, limits = requests_of(container), limits_of(container)
    new_requests = dict(requests)
    new_limits = dict(limits)
    for resource, value in _wanted(target, qos).items():
        if resource not in requests:
            continue  # adding a request is not a resize; the pod's spec stays the owner's
        new_requests[resource] = value
        if resource in limits:
            if qos is Qos.GUARANTEED:
                new_limits[resource] = value
            else:
                new_limits[resource] = _new_limit(requests[resource], limits[resource], value)
    floor = target.memory_limit_bytes
    if floor is not None and qos is not Qos.GUARANTEED and "memory" in limits:
        new_limits["memory"] = max(new_limits["memory"], math.ceil(floor))
    if new_requests == requests and new_limits == limits:
        return None
    return ContainerResize(
        str(container.get("name")),
        {r: v for r, v in new_requests.items() if r in requests},
        {r: v for r, v in new_limits.items() if r in limits},
    )


def _with_resize(container: Json, change: ContainerResize) -> Json:
    return {**container, "resources": change.resources()}


def plan_resize(pod: Json, targets: Mapping[str, Target]) -> ResizePlan | Skipped:
    """The resize that brings the pod's containers to `targets` (by container name)."""
    containers: list[Json] = list((pod.get("spec") or {}).get("containers") or [])
    qos = qos_of(containers)
    if qos is Qos.BEST_EFFORT:
        return Skipped("BestEffort pod: no requests to resize")
    changes: list[ContainerResize] = []
    resized: list[Json] = []
    for container in containers:
        target = targets.get(str(container.get("name")))
        change = _container_resize(container, target, qos) if target else None
        if change:
            changes.append(change)
        resized.append(_with_resize(container, change) if change else container)
    if changes and qos_of(resized) is not qos:
        return Skipped(f"the scheduled amounts would make a {qos} pod {qos_of(resized)}")
    return ResizePlan(tuple(changes))
