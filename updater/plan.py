"""Turn a container's scheduled target into a resize the API server accepts (pure).

The amounts go through the same pipeline as every VPA write (`tailor.capping`:
the VPA's resource policy and the namespace's LimitRanges, then `tailor.limits`:
limits kept in proportion to requests, or left alone with RequestsOnly), so a
Guaranteed pod stays Guaranteed. The API server refuses (422) a resize that
changes the QoS class or adds a request the container did not have, so neither
is planned: such a pod is Skipped with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from tailor.api.limitrange import LimitRangeItem
from tailor.api.meta import ResourceList
from tailor.api.vpa import PodResourcePolicy, RecommendedContainerResources
from tailor.capping import PodCapping, cap_recommendations_for_pod
from tailor.limits import (
    ContainerResources,
    fit_pod_limit_ratio,
    limits_follow,
    new_container_resources,
)
from tailor.pod_level import Qos, qos_of_stanzas
from tailor.pods import (
    APP_FIELD,
    INIT_FIELD,
    plain_init_container_names,
    sized_containers,
)
from tailor.quantity import Quantity, memory_quantity
from updater.due_targets import Target
from updater.resources import Amounts, Json, requests_of


@dataclass(frozen=True)
class ContainerResize:
    """New cpu / memory requests and limits for one container."""

    name: str
    requests: Mapping[str, Quantity]
    limits: Mapping[str, Quantity]
    sidecar: bool = False  # a native sidecar: it sits in spec.initContainers

    def resources(self) -> Json:
        requests, limits = self._texts
        body: dict[str, dict[str, str]] = {}
        if requests:
            body["requests"] = dict(requests)
        if limits:
            body["limits"] = dict(limits)
        return body

    @cached_property
    def _texts(self) -> tuple[dict[str, str], dict[str, str]]:
        """The canonical texts, printed once: a plan serves every replica of a workload."""
        requests = {r: q.canonical() for r, q in self.requests.items()}
        return requests, {r: q.canonical() for r, q in self.limits.items()}

    def request_amounts(self) -> Amounts:
        """The new requests in millicores and bytes, for the node-fit sums."""
        return self._amounts

    @cached_property
    def _amounts(self) -> Amounts:
        cpu, memory = self.requests.get("cpu"), self.requests.get("memory")
        return Amounts(
            cpu.milli_value() if cpu is not None else 0,
            memory.int_value() if memory is not None else 0,
        )


@dataclass(frozen=True)
class ResizePlan:
    """What to send to `pods/resize`; empty when the pod already asks for its targets."""

    containers: tuple[ContainerResize, ...]
    notes: tuple[str, ...] = ()
    pod_level: ContainerResize | None = None  # the new spec.resources (`tailor.pod_level`)

    @cached_property
    def requested(self) -> dict[str, tuple[int, int]]:
        """Each changed container's new requests (millicores, bytes), for the node sums."""
        amounts = {c.name: c.request_amounts() for c in self.containers}
        return {name: (a.cpu_millis, a.memory_bytes) for name, a in amounts.items()}

    @cached_property
    def sent(self) -> dict[str, Json] | None:
        """Each changed container's resources as `patch` sends them, by name, for checking
        the API server's answer against; None when a new request is negative or the pod's
        own resources change (the answer is then read afresh)."""
        if self.pod_level is not None or any(min(a) < 0 for a in self.requested.values()):
            return None
        return {c.name: c.resources() for c in self.containers}

    @property
    def changes(self) -> bool:
        return bool(self.containers) or self.pod_level is not None

    def patch(self) -> Json:
        """A strategic merge patch: containers (and init containers) merge by name,
        untouched ones stay."""
        spec: dict[str, list[Json]] = {APP_FIELD: []}
        for container in self.containers:
            field = INIT_FIELD if container.sidecar else APP_FIELD
            spec.setdefault(field, []).append(
                {"name": container.name, "resources": container.resources()}
            )
        if self.pod_level is not None:
            return {"spec": {**spec, "resources": self.pod_level.resources()}}
        return {"spec": spec}

    def describe(self) -> str:
        return self._description

    @cached_property
    def _description(self) -> str:
        parts = []
        for container in (*self.containers, *([self.pod_level] if self.pod_level else [])):
            amounts = ", ".join(f"{r} {q.canonical()}" for r, q in container.requests.items())
            parts.append(f"{container.name}: {amounts}")
        return "; ".join(parts + list(self.notes))


@dataclass(frozen=True)
class Skipped:
    """The pod cannot be resized to its targets; `reason` says why."""

    reason: str


@dataclass(frozen=True)
class PodRules:
    """What bounds a pod's resize besides its spec: its VPA's policy, its LimitRanges."""

    resource_policy: PodResourcePolicy | None = None
    container_limit_range: LimitRangeItem | None = None
    pod_limit_range: LimitRangeItem | None = None

    def cap(
        self,
        wanted: Sequence[RecommendedContainerResources],
        containers: Sequence[ContainerResources],
    ) -> PodCapping:
        """`wanted` for a pod of `containers`, within these rules (`tailor.capping`)."""
        return cap_recommendations_for_pod(
            wanted,
            containers,
            self.resource_policy,
            self.container_limit_range,
            self.pod_limit_range,
        )


def wanted_amounts(target: Target, qos: Qos, requested: Mapping[str, int]) -> ResourceList:
    """The target as quantities, for the resources the container already requests."""
    memory = target.memory_bytes
    if qos is Qos.GUARANTEED and memory is not None and target.memory_limit_bytes is not None:
        memory = max(memory, target.memory_limit_bytes)  # one value is request and limit
    cpu = target.cpu_cores
    wanted = ResourceList.from_amounts(
        None if cpu is None else max(cpu, 0.001),
        None if memory is None else max(math.ceil(memory), 1),
    )
    return ResourceList({r: q for r, q in wanted.items() if r in requested})


def _all_containers(pod: Json) -> list[Json]:
    spec = pod.get("spec") or {}
    return [*(spec.get(APP_FIELD) or []), *(spec.get(INIT_FIELD) or [])]


def _resized(
    stanzas: Sequence[ContainerResources], changes: Mapping[str, ContainerResize]
) -> list[ContainerResources]:
    """The containers' requests and limits once `changes` are made (for the QoS class)."""
    resized = []
    for stanza in stanzas:
        change = changes.get(stanza.name)
        if change is not None:
            # a limit stands in for a missing request, as `of_container` reads the JSON
            requests = ResourceList({**change.limits, **change.requests})
            stanza = ContainerResources(stanza.name, requests, ResourceList(change.limits))
        resized.append(stanza)
    return resized


def plan_resize(
    pod: Json, targets: Mapping[str, Target], rules: PodRules | None = None
) -> ResizePlan | Skipped:
    """The resize that brings the pod's containers to `targets` (by container name)."""
    rules = rules or PodRules()
    stanzas = [ContainerResources.of_container(c) for c in _all_containers(pod)]
    qos = qos_of_stanzas(stanzas)
    if qos is Qos.BEST_EFFORT:
        return Skipped("BestEffort pod: no requests to resize")
    sized = sized_containers(pod)
    containers = [c.spec for c in sized]
    sidecars = {c.name for c in sized if c.sidecar}
    current = {c.name: ContainerResources.of_container(c.spec) for c in sized}
    wanted = [
        RecommendedContainerResources(
            container_name=c.name, target=wanted_amounts(targets[c.name], qos, requests_of(c.spec))
        )
        for c in sized
        if c.name in targets
    ]

    def capped_by(container_range: LimitRangeItem | None) -> PodCapping:
        return cap_recommendations_for_pod(
            wanted,
            list(current.values()),
            rules.resource_policy,
            container_range,
            rules.pod_limit_range,
        )

    # a planned limit is capped itself (`with_planned_memory_limit`): the LimitRange's max
    # need not lower the requests for a proportional limit that is not written
    planned = all(
        targets[w.container_name or ""].memory_limit_bytes is not None
        and "memory" in current[w.container_name or ""].limits
        for w in wanted
        if "memory" in (w.target or {})
    )
    own_range = rules.container_limit_range
    capped = capped_by(_without_memory_max(own_range) if planned else own_range)
    changes, lowered = container_changes(
        current, capped.recommendations, rules, targets, sidecars, True
    )
    after = qos_of_stanzas(_resized(stanzas, changes))
    kept_ratio: tuple[str, ...] = ()
    if after is not qos:  # the plan's memory limit would change the class: keep the ratio
        capped = capped_by(own_range)
        changes, lowered = container_changes(
            current, capped.recommendations, rules, targets, sidecars
        )
        kept_ratio = (f"memory limit kept in proportion: the plan's would make the pod {after}",)
        after = qos_of_stanzas(_resized(stanzas, changes))
    if after is not qos:
        return Skipped(f"the scheduled amounts would make a {qos} pod {after}")
    notes = (
        kept_ratio
        + tuple(note for notes in capped.notes.values() for note in notes)
        + tuple(
            f"{name}: {resource} limit lowered to fit the Pod maxLimitRequestRatio"
            for name, resource in lowered
        )
    )
    restarts = restart_notes(containers, changes, current)
    notes = (notes + restarts) if changes else ()
    return ResizePlan(tuple(changes.values()), notes + not_followed(pod, targets))


def container_changes(
    current: Mapping[str, ContainerResources],
    recommendations: Sequence[RecommendedContainerResources],
    rules: PodRules,
    targets: Mapping[str, Target],
    sidecars: Collection[str],
    plan_limits: bool = False,
) -> tuple[dict[str, ContainerResize], list[tuple[str, str]]]:
    """The containers that change, and which limits the Pod ratio lowered. Limits keep
    their ratio to requests, or with `plan_limits`, memory takes the plan's limit."""
    updated = dict(current)
    movable: set[tuple[str, str]] = set()
    for recommendation in recommendations:
        name = recommendation.container_name or ""
        policy = rules.resource_policy.policy_for(name) if rules.resource_policy else None
        update = new_container_resources(
            current[name], recommendation.target, policy, rules.container_limit_range
        )
        updated[name] = update.resources
        if limits_follow(policy):
            movable.update((name, resource) for resource in recommendation.target or {})
            if plan_limits and "memory" in (recommendation.target or {}):
                updated[name] = with_planned_memory_limit(
                    update.resources, targets[name], rules.container_limit_range
                )
    fitted, lowered = fit_pod_limit_ratio(list(updated.values()), movable, rules.pod_limit_range)
    changes: dict[str, ContainerResize] = {}
    for new in fitted:
        if new.requests != current[new.name].requests or new.limits != current[new.name].limits:
            changes[new.name] = ContainerResize(
                new.name, dict(new.requests), dict(new.limits), new.name in sidecars
            )
    return changes, lowered


def _without_memory_max(limit_range: LimitRangeItem | None) -> LimitRangeItem | None:
    if limit_range is None or not limit_range.max or "memory" not in limit_range.max:
        return limit_range
    most = ResourceList({r: q for r, q in limit_range.max.items() if r != "memory"})
    return limit_range.model_copy(update={"max": most or None})


def with_planned_memory_limit(
    resources: ContainerResources, target: Target, limit_range: LimitRangeItem | None
) -> ContainerResources:
    """The plan's memory limit in place of the proportional one, where the plan gives one
    and the container has a memory limit (none is added): never under the request, nor
    over the LimitRange's max (the request is lowered to it too) or request x
    maxLimitRequestRatio."""
    planned, request = target.memory_limit_bytes, resources.requests.get("memory")
    if planned is None or "memory" not in resources.limits or request is None:
        return resources
    most = limit_range.max if limit_range else None
    ratios = limit_range.max_limit_request_ratio if limit_range else None
    ceiling = most.get("memory") if most else None
    ratio = ratios.get("memory") if ratios else None
    asked = request.int_value()
    if ceiling is not None:
        asked = min(asked, ceiling.int_value())
    limit = max(math.ceil(planned), asked)
    if ceiling is not None:
        limit = min(limit, ceiling.int_value())
    if ratio is not None:
        limit = min(limit, math.floor(asked * ratio.value))
    requests = ResourceList(resources.requests)
    if asked != request.int_value():
        requests["memory"] = memory_quantity(asked)
    limits = ResourceList(resources.limits)
    limits["memory"] = memory_quantity(limit)
    return ContainerResources(name=resources.name, requests=requests, limits=limits)


def restart_notes(
    containers: Sequence[Json],
    changes: Mapping[str, ContainerResize],
    current: Mapping[str, ContainerResources],
) -> tuple[str, ...]:
    """Which changed resources the container's resizePolicy says restart it: the kubelet
    does, as the pod's owner asked; the report says so."""
    said = []
    for container in containers:
        name = str(container.get("name"))
        change = changes.get(name)
        if change is None:
            continue
        before = current[name]
        for policy in container.get("resizePolicy") or []:
            resource = policy.get("resourceName") if isinstance(policy, Mapping) else None
            if policy.get("restartPolicy") != "RestartContainer" or resource is None:
                continue
            if change.requests.get(resource) != before.requests.get(resource) or (
                change.limits.get(resource) != before.limits.get(resource)
            ):
                said.append(
                    f"{name}: {resource} resizePolicy RestartContainer, the kubelet restarts it"
                )
    return tuple(said)


def not_followed(pod: Json, targets: Mapping[str, Target]) -> tuple[str, ...]:
    """Targets for plain init containers (they ran to completion before the pod started)
    are not resized: the report says so rather than count the pod as on target."""
    plain = set(plain_init_container_names(pod))
    return tuple(f"{name}: init container, not resized" for name in sorted(plain & set(targets)))
