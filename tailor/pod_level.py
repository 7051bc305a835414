"""Pod-level resources (KEP-2837; in-place resize KEP-5419): the sizing rule the webhook
and the updater share (pure).

A pod may set `spec.resources`: requests and limits for the pod as a whole. Its
containers without their own requests share the pod's; containers with their own keep
them, within it. The API server then derives the pod's QoS class from the pod-level
stanza alone, the scheduler counts the pod-level requests (plus overhead) on its node,
and validation wants the pod-level requests at least the containers' aggregate requests
and every container limit at most the pod-level limit. Since Kubernetes 1.36 (gate
`InPlacePodLevelResourcesVerticalScaling`, beta) `pods/resize` changes the stanza in
place.

The VPA API has per-container recommendations only, so the pod's figure is derived
from them, the same way at admission and in the updater: a container with its own
request for a resource keeps it (sized to its target as any container is), and the
pod-level request is the sum over the pod's sized containers of their own requests or,
for those sharing the pod's, their targets, never under the aggregate the API server
checks. The sum of per-container targets is a conservative figure (their peaks need
not coincide); the docs page pod-level-resources.md says so. Pod-level limits keep
their ratio to the pod-level request as container limits do, unless every container's
policy says RequestsOnly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tailor.api.limitrange import LimitRangeItem
from tailor.api.meta import ResourceList
from tailor.api.vpa import ContainerResourcePolicy, ControlledValues
from tailor.limits import LIMIT_SCALED_RESOURCES, ContainerResources, new_container_resources
from tailor.quantity import Quantity

Json = Mapping[str, Any]

POD_STANZA = "pod"  # the name the pod-level stanza carries as ContainerResources
_REQUESTS_ONLY = ContainerResourcePolicy(controlled_values=ControlledValues.REQUESTS_ONLY)


class Qos(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


def pod_level_resources(pod: Json) -> ContainerResources | None:
    """The pod's `spec.resources` (cpu and memory), None when it sets neither.

    Raises QuantityError on an unreadable amount."""
    spec = pod.get("spec")
    stanza = spec.get("resources") if isinstance(spec, Mapping) else None
    if not isinstance(stanza, Mapping):
        return None
    found = ContainerResources.of_container({"name": POD_STANZA, "resources": stanza})
    return found if found.requests or found.limits else None


def qos_of_stanzas(stanzas: Sequence[ContainerResources]) -> Qos:
    """The API server's rule over requests / limits: all unset, BestEffort; cpu and memory
    limits everywhere with equal requests, Guaranteed; else Burstable."""
    if not any(s.requests or s.limits for s in stanzas):
        return Qos.BEST_EFFORT
    for stanza in stanzas:
        for resource in LIMIT_SCALED_RESOURCES:
            limit = stanza.limits.get(resource)
            if limit is None or stanza.requests.get(resource) != limit:
                return Qos.BURSTABLE
    return Qos.GUARANTEED


def container_qos(containers: Sequence[Json]) -> Qos:
    """The class from containers' stanzas (pod specs' JSON; a limit stands in for a
    missing request, as the API server defaults it). Raises QuantityError."""
    return qos_of_stanzas([ContainerResources.of_container(c) for c in containers])


def qos_class(pod: Json) -> Qos:
    """The QoS class the API server derives: from the pod-level stanza alone when the pod
    sets one, else from every container's (init containers' included)."""
    stanza = pod_level_resources(pod)
    if stanza is not None:
        return qos_of_stanzas([stanza])
    spec = pod.get("spec") or {}
    return container_qos([*(spec.get("containers") or []), *(spec.get("initContainers") or [])])


@dataclass(frozen=True)
class PodLevelSizing:
    """The new pod-level stanza and why it differs from the recommendation's sum."""

    resources: ContainerResources
    notes: tuple[str, ...] = ()


def _floor(resource: str, sized: Sequence[ContainerResources], plain_init: Sequence[Any]) -> int:
    """The aggregate of the containers' own requests (nanos), which the API server wants the
    pod-level request to cover: app containers and sidecars together, or the largest plain
    init container beside them (an upper bound of KEP-753's formula)."""
    running = sum(c.requests[resource].nanos for c in sized if resource in c.requests)
    init = max(
        (c.requests[resource].nanos for c in plain_init if resource in c.requests), default=0
    )
    return running + init


def size_pod_level(
    stanza: ContainerResources,
    sized: Sequence[ContainerResources],
    targets: Mapping[str, Mapping[str, Quantity]],
    plain_init: Sequence[ContainerResources] = (),
    follow_limits: bool = True,
    pod_range: LimitRangeItem | None = None,
) -> PodLevelSizing:
    """The pod-level stanza for the containers' new resources `sized` (app containers and
    sidecars) and their capped `targets` (by container name).

    Only the resources the stanza requests change. A container without its own request
    for a resource counts with its target; one with neither leaves that resource as it
    is, with a note (no figure for it would be a guess). A Pod LimitRange's max and min
    bound the stanza itself: the LimitRanger checks the pod-level amounts (403)."""
    wanted = ResourceList()
    notes: list[str] = []
    for resource in LIMIT_SCALED_RESOURCES:
        if resource not in stanza.requests:
            continue
        total, missing = 0, []
        for container in sized:
            amount = container.requests.get(resource) or targets.get(container.name, {}).get(
                resource
            )
            if amount is None:
                missing.append(container.name)
            else:
                total += amount.nanos
        floor = _floor(resource, sized, plain_init)
        if missing and floor <= stanza.requests[resource].nanos:
            notes.append(
                f"pod-level {resource} request left as is: no {resource} target for "
                + ", ".join(missing)
            )
            continue
        if missing:  # the containers' own requests grew past it: the API wants it covered
            notes.append(f"pod-level {resource} request raised to the containers' own requests")
            total = 0
        total = max(total, floor)
        wanted[resource] = Quantity(total, stanza.requests[resource].format)
    if not wanted:
        return PodLevelSizing(stanza, tuple(notes))
    policy = None if follow_limits else _REQUESTS_ONLY
    updated = new_container_resources(stanza, wanted, policy).resources
    requests = ResourceList(updated.requests)
    for resource, limit in updated.limits.items():
        if resource in requests and requests[resource] > limit:  # RequestsOnly: limit stays
            requests[resource] = limit
            notes.append(f"pod-level {resource} request capped to the pod-level limit")
    new = ContainerResources(name=POD_STANZA, requests=requests, limits=updated.limits)
    new, bounded = _within_pod_range(new, pod_range, list(wanted))
    return PodLevelSizing(new, tuple(notes + bounded))


def _within_pod_range(
    stanza: ContainerResources, pod_range: LimitRangeItem | None, resources: Sequence[str]
) -> tuple[ContainerResources, list[str]]:
    """The written amounts of `resources` within the Pod LimitRange's [min, max]."""
    if pod_range is None:
        return stanza, []
    requests, limits = ResourceList(stanza.requests), ResourceList(stanza.limits)
    notes = []
    for resource in resources:
        most = pod_range.max.get(resource) if pod_range.max else None
        least = pod_range.min.get(resource) if pod_range.min else None
        for word, values in (("request", requests), ("limit", limits)):
            amount = values.get(resource)
            if amount is None:
                continue
            if most is not None and amount > most:
                values[resource] = Quantity(most.nanos, amount.format)
                notes.append(f"pod-level {resource} {word} capped to the Pod LimitRange max")
            elif least is not None and amount < least:
                values[resource] = Quantity(least.nanos, amount.format)
                notes.append(f"pod-level {resource} {word} raised to the Pod LimitRange min")
    return ContainerResources(POD_STANZA, requests, limits), notes


def within_pod_limits(
    containers: Sequence[ContainerResources], stanza: ContainerResources
) -> tuple[list[ContainerResources], list[str]]:
    """Container limits lowered to the pod-level limit where they would pass it (the API
    server refuses a container limit above the pod's), never under the container's request;
    and a note per lowered limit."""
    fitted: list[ContainerResources] = []
    notes: list[str] = []
    for container in containers:
        limits = ResourceList(container.limits)
        for resource, limit in container.limits.items():
            ceiling = stanza.limits.get(resource)
            if ceiling is None or limit <= ceiling:
                continue
            request = container.requests.get(resource)
            limits[resource] = max(ceiling, request) if request is not None else ceiling
            notes.append(f"{container.name}: {resource} limit lowered to the pod-level limit")
        fitted.append(ContainerResources(container.name, container.requests, limits))
    return fitted, notes


def limits_follow_for_pod(policies: Sequence[ContainerResourcePolicy | None]) -> bool:
    """Pod-level limits move with the pod-level request unless every container's policy
    says RequestsOnly."""
    return not policies or any(
        p is None or p.effective_controlled_values() is not ControlledValues.REQUESTS_ONLY
        for p in policies
    )


def stanza_body(stanza: ContainerResources) -> dict[str, dict[str, str]]:
    """The stanza as the API writes it (`spec.resources`)."""
    body: dict[str, dict[str, str]] = {}
    if stanza.requests:
        body["requests"] = {r: q.canonical() for r, q in stanza.requests.items()}
    if stanza.limits:
        body["limits"] = {r: q.canonical() for r, q in stanza.limits.items()}
    return body


POD_LEVEL_CONDITION = "PodLevelResources"  # ours: the VPA status has no pod-level field


def sets_pod_level_resources(pod: Json) -> bool:
    """Whether the pod's spec has a `resources` stanza with requests or limits."""
    spec = pod.get("spec")
    stanza = spec.get("resources") if isinstance(spec, Mapping) else None
    return isinstance(stanza, Mapping) and bool(stanza.get("requests") or stanza.get("limits"))


def pod_level_message(
    targets: Mapping[str, Mapping[str, Quantity]], containers: Sequence[str]
) -> str:
    """The PodLevelResources condition's message: the pod-level figure the webhook and the
    updater derive from the container targets (`size_pod_level`), which no field of the
    VPA status holds."""
    said = []
    for resource in LIMIT_SCALED_RESOURCES:
        missing = [name for name in containers if resource not in targets.get(name, {})]
        if missing:
            said.append(f"{resource} not derived (no target for {', '.join(sorted(missing))})")
            continue
        total = sum((targets[name][resource] for name in containers), Quantity(0))
        said.append(f"{resource} {total.canonical()}")
    return (
        "its pods set pod-level resources (spec.resources): the pod-level requests are the "
        "sum of the containers' targets, " + ", ".join(said) + "; pod-level limits keep their "
        "ratio; containers without their own requests share the pod's"
    )
