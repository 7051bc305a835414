"""What the scheduler counts for a pod, read from its JSON once per pass (pure).

The scheduler counts each container at the largest of its spec, applied
(`status.resources`) and allocated requests, drops the spec when the pod's resize is
Infeasible, and counts a pod that sets pod-level resources (KEP-2837) at those. A pass
asks for a pod's count several times (its node's total, its fit before and after the
resize, an eviction's landing), so the amounts are parsed once into a `PodCount`, and
the counts are sums of plain integers (millicores, bytes): a pass makes tens of
thousands of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from tailor.pods import APP_FIELD, INIT_FIELD, container_statuses, is_native_sidecar
from updater.plan import ResizePlan
from updater.resize_status import ResizeState, resize_status
from updater.resources import Amounts, Json, amount_pair, requested_pair, resource_list

Pair = tuple[int, int]  # millicores, bytes

APP, SIDECAR, PLAIN_INIT = "app", "sidecar", "plain init"
_NOTHING_PLANNED: Mapping[str, Pair] = {}


class CountedContainer(NamedTuple):
    """A container's requests (a limit standing in) and, when the kubelet reports it, the
    larger of its applied and allocated requests (None: no status)."""

    name: str
    kind: str  # APP, SIDECAR or PLAIN_INIT
    spec: Pair
    in_flight: Pair | None = None


@dataclass(frozen=True, slots=True)
class PodLevel:
    """A pod's own requests (`spec.resources.requests`, by resource) and the larger of its
    applied and allocated pod-level requests (KEP-5419)."""

    asked: Mapping[str, int]
    in_flight: Pair


class PodCount(NamedTuple):
    """A pod's amounts as the scheduler reads them; `effective` sums them. Made by
    `counted_pod`, which sums `now` once: every count of the pass asks for it."""

    containers: tuple[CountedContainer, ...]  # app containers, then init containers in order
    overhead: Pair
    pod_level: PodLevel | None
    infeasible: bool  # its last resize is Infeasible: the scheduler drops the spec
    now: Amounts  # the count as the pod is

    def effective(self, plan: ResizePlan | None = None) -> Amounts:
        """What the scheduler counts; with `plan`, as if its resize were asked for."""
        return self.now if plan is None else self._counted(True, plan)

    def _counted(self, use_spec: bool, plan: ResizePlan | None) -> Amounts:
        return _summed(self.containers, self.overhead, self.pod_level, use_spec, plan)


def counted_pod(
    containers: tuple[CountedContainer, ...],
    overhead: Pair,
    pod_level: PodLevel | None,
    infeasible: bool,
) -> PodCount:
    """The `PodCount` of these amounts, its `now` summed."""
    now = _summed(containers, overhead, pod_level, not infeasible, None)
    return PodCount(containers, overhead, pod_level, infeasible, now)


def _summed(
    containers: tuple[CountedContainer, ...],
    overhead: Pair,
    pod_level: PodLevel | None,
    use_spec: bool,
    plan: ResizePlan | None,
) -> Amounts:
    """What the scheduler counts for these amounts; with `plan`, as if it were asked for."""
    planned = plan.requested if plan is not None else _NOTHING_PLANNED
    cpu = memory = 0  # app containers and sidecars: they run together
    sidecar_cpu = sidecar_memory = 0  # the sidecars started so far
    plain: list[Pair] = []  # each plain init container beside the sidecars before it
    for name, kind, spec, flight in containers:
        if kind == PLAIN_INIT:
            plain.append((sidecar_cpu + spec[0], sidecar_memory + spec[1]))
            continue
        # a running container: the largest of its spec (or the planned change), applied
        # and allocated
        change = planned.get(name)
        if change is not None:
            found_cpu, found_memory = max(0, change[0]), max(0, change[1])
        elif use_spec:
            found_cpu, found_memory = spec
        else:
            found_cpu = found_memory = 0
        if flight is not None:
            found_cpu, found_memory = max(found_cpu, flight[0]), max(found_memory, flight[1])
        cpu, memory = cpu + found_cpu, memory + found_memory
        if kind == SIDECAR:
            sidecar_cpu, sidecar_memory = sidecar_cpu + found_cpu, sidecar_memory + found_memory
    for init_cpu, init_memory in plain:  # the largest of the running and each of these
        cpu, memory = max(cpu, init_cpu), max(memory, init_memory)
    cpu, memory = cpu + overhead[0], memory + overhead[1]
    if pod_level is None:
        return Amounts(cpu, memory)
    return _at_pod_level(pod_level, overhead, (cpu, memory), use_spec, plan)


def _at_pod_level(
    level: PodLevel, overhead: Pair, total: Pair, use_spec: bool, plan: ResizePlan | None
) -> Amounts:
    """A resource the pod requests at pod level counts at that request, the largest of
    spec (or the plan's), applied and allocated, plus overhead; the rest as its
    containers."""
    if plan is not None and plan.pod_level is not None:
        asked = plan.pod_level.request_amounts()
        spec = (asked.cpu_millis, asked.memory_bytes)
    elif use_spec:
        spec = (level.asked.get("cpu", 0), level.asked.get("memory", 0))
    else:
        spec = (0, 0)
    cpu = max(spec[0], level.in_flight[0]) + overhead[0]
    memory = max(spec[1], level.in_flight[1]) + overhead[1]
    return Amounts(
        cpu if "cpu" in level.asked else total[0],
        memory if "memory" in level.asked else total[1],
    )


def _larger(first: Json | None, second: Json | None) -> Pair:
    """The larger, per resource, of two ResourceLists (a missing amount counts 0)."""
    one, other = amount_pair(first), amount_pair(second)
    return max(one[0], other[0]), max(one[1], other[1])


def _in_flight(status: Json | None) -> Pair | None:
    if not status:
        return None
    applied = amount_pair((status.get("resources") or {}).get("requests"))
    allocated = amount_pair(status.get("allocatedResources"))
    if applied[0] >= allocated[0] and applied[1] >= allocated[1]:
        return applied
    return max(applied[0], allocated[0]), max(applied[1], allocated[1])


def _pod_level(pod: Json, spec: Json) -> PodLevel | None:
    asked = resource_list((spec.get("resources") or {}).get("requests"))
    if not asked:
        return None
    status = pod.get("status") or {}
    applied = (status.get("resources") or {}).get("requests")
    return PodLevel(asked, _larger(applied, status.get("allocatedResources")))


def pod_count(pod: Json) -> PodCount:
    """Read `pod`'s amounts. Raises QuantityError on an unreadable one."""
    spec = pod.get("spec") or {}
    infeasible = resize_status(pod).state is ResizeState.INFEASIBLE
    statuses = container_statuses(pod)  # names are unique across both kinds of container
    containers = []
    for container in spec.get(APP_FIELD) or ():
        name, requests = str(container.get("name")), requested_pair(container)
        containers.append(CountedContainer(name, APP, requests, _in_flight(statuses.get(name))))
    for container in spec.get(INIT_FIELD) or ():
        name, requests = str(container.get("name")), requested_pair(container)
        if is_native_sidecar(container):
            flight = _in_flight(statuses.get(name))
            containers.append(CountedContainer(name, SIDECAR, requests, flight))
        else:  # a plain init container counts at its requests only
            containers.append(CountedContainer(name, PLAIN_INIT, requests))
    overhead = amount_pair(spec.get("overhead"))
    level = _pod_level(pod, spec) if spec.get("resources") else None
    return counted_pod(tuple(containers), overhead, level, infeasible)
