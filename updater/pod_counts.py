"""What the scheduler counts for a pod, read from its JSON once per pass (pure).

The scheduler counts each container at the largest of its spec, applied
(`status.resources`) and allocated requests, drops the spec when the pod's resize is
Infeasible, and counts a pod that sets pod-level resources (KEP-2837) at those. A pass
asks for a pod's count several times (its node's total, its fit before and after the
resize, an eviction's landing), so the amounts are parsed once into a `PodCount` and
the counts are sums over integers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from tailor.pods import container_statuses, is_native_sidecar
from updater.plan import ResizePlan
from updater.resize_status import ResizeState, resize_status
from updater.resources import Amounts, Json, requests_of, resource_list, sum_amounts, to_amounts


@dataclass(frozen=True)
class CountedContainer:
    """A container's requests (a limit standing in) and, when the kubelet reports it, the
    larger of its applied and allocated requests (None: no status)."""

    name: str
    spec: Amounts
    in_flight: Amounts | None = None

    def counted(self, use_spec: bool) -> Amounts:
        found = self.spec if use_spec else Amounts()
        return found if self.in_flight is None else found.larger(self.in_flight)


@dataclass(frozen=True)
class PodLevel:
    """A pod's own requests (`spec.resources.requests`, by resource) and the larger of its
    applied and allocated pod-level requests (KEP-5419)."""

    asked: Mapping[str, int]
    in_flight: Amounts


@dataclass(frozen=True)
class PodCount:
    """A pod's amounts as the scheduler reads them; `effective` sums them."""

    app: tuple[CountedContainer, ...]
    init: tuple[tuple[bool, CountedContainer], ...]  # (native sidecar?, container), in order
    overhead: Amounts
    pod_level: PodLevel | None
    infeasible: bool  # its last resize is Infeasible: the scheduler drops the spec

    @cached_property
    def now(self) -> Amounts:
        """What the scheduler counts for the pod as it is (asked for on every count)."""
        return self._counted(not self.infeasible, None)

    def effective(self, plan: ResizePlan | None = None) -> Amounts:
        """What the scheduler counts; with `plan`, as if its resize were asked for."""
        return self.now if plan is None else self._counted(True, plan)

    def _counted(self, use_spec: bool, plan: ResizePlan | None) -> Amounts:
        planned = {c.name: c.request_amounts() for c in plan.containers} if plan else {}

        def counted(container: CountedContainer) -> Amounts:
            change = planned.get(container.name)
            if change is None:
                return container.counted(use_spec)
            # the new spec replaces the old one in the max
            return container.counted(use_spec=False).larger(change)

        running = [counted(c) for c in self.app]
        sidecars = Amounts()
        plain: list[Amounts] = []
        for sidecar, container in self.init:
            if sidecar:  # resizable: the same max rule
                sidecars = sidecars + counted(container)
            else:  # runs beside the sidecars started before it (KEP-753)
                plain.append(sidecars + container.spec)
        total = sum_amounts(running) + sidecars
        for init in plain:
            total = total.larger(init)
        return self._at_pod_level(total + self.overhead, use_spec, plan)

    def _at_pod_level(self, total: Amounts, use_spec: bool, plan: ResizePlan | None) -> Amounts:
        """A resource the pod requests at pod level counts at that request, the largest of
        spec (or the plan's), applied and allocated, plus overhead; the rest as its
        containers."""
        level = self.pod_level
        if level is None:
            return total
        if plan is not None and plan.pod_level is not None:
            spec_amounts = plan.pod_level.request_amounts()
        elif use_spec:
            spec_amounts = to_amounts(level.asked)
        else:
            spec_amounts = Amounts()
        counted = spec_amounts.larger(level.in_flight) + self.overhead
        return Amounts(
            counted.cpu_millis if "cpu" in level.asked else total.cpu_millis,
            counted.memory_bytes if "memory" in level.asked else total.memory_bytes,
        )


def _in_flight(status: Json | None) -> Amounts | None:
    if not status:
        return None
    applied = resource_list((status.get("resources") or {}).get("requests"))
    allocated = resource_list(status.get("allocatedResources"))
    return to_amounts(applied).larger(to_amounts(allocated))


def _pod_level(pod: Json) -> PodLevel | None:
    asked = resource_list(((pod.get("spec") or {}).get("resources") or {}).get("requests"))
    if not asked:
        return None
    status = pod.get("status") or {}
    applied = resource_list((status.get("resources") or {}).get("requests"))
    allocated = resource_list(status.get("allocatedResources"))
    return PodLevel(asked, to_amounts(applied).larger(to_amounts(allocated)))


def pod_count(pod: Json) -> PodCount:
    """Read `pod`'s amounts. Raises QuantityError on an unreadable one."""
    spec = pod.get("spec") or {}
    infeasible = resize_status(pod).state is ResizeState.INFEASIBLE
    statuses = container_statuses(pod)  # names are unique across both kinds of container

    def counted(container: Json) -> CountedContainer:
        name = str(container.get("name"))
        spec_amounts = to_amounts(requests_of(container))
        return CountedContainer(name, spec_amounts, _in_flight(statuses.get(name)))

    app = tuple(counted(c) for c in spec.get("containers") or [])
    init: list[tuple[bool, CountedContainer]] = []
    for container in spec.get("initContainers") or []:
        if is_native_sidecar(container):
            init.append((True, counted(container)))
        else:  # a plain init container counts at its requests only
            name = str(container.get("name"))
            init.append((False, CountedContainer(name, to_amounts(requests_of(container)))))
    overhead = to_amounts(resource_list(spec.get("overhead")))
    return PodCount(app, tuple(init), overhead, _pod_level(pod), infeasible)
