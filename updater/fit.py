"""Will a resized pod still fit its node? The scheduler's own accounting (pure).

The kubelet answers a resize that does not fit with Deferred or Infeasible, and
the pod then waits at its old size; asking only for what fits keeps the updater
from filling a node's queue with resizes that cannot happen. The scheduler counts
each container at the largest of its spec, applied (`status.resources`) and
allocated requests, and drops the spec when the pod's resize is Infeasible.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tailor.pods import container_statuses, is_native_sidecar
from updater.plan import ResizePlan
from updater.resize_status import ResizeState, resize_status
from updater.resources import Amounts, Json, requests_of, resource_list, sum_amounts, to_amounts

_FINISHED = ("Succeeded", "Failed")


def _container_effective(container: Json, status: Json | None, use_spec: bool) -> Amounts:
    found = to_amounts(requests_of(container)) if use_spec else Amounts()
    if status:
        applied = resource_list((status.get("resources") or {}).get("requests"))
        allocated = resource_list(status.get("allocatedResources"))
        found = found.larger(to_amounts(applied)).larger(to_amounts(allocated))
    return found


def _pod_total(
    app: Iterable[Amounts],
    sidecars: Iterable[Amounts],
    plain_init: Iterable[Amounts],
    overhead: Amounts,
) -> Amounts:
    running = sum_amounts(app) + sum_amounts(sidecars)
    for init in plain_init:
        running = running.larger(init)
    return running + overhead


def effective_requests(pod: Json, plan: ResizePlan | None = None) -> Amounts:
    """What the scheduler counts for `pod`; with `plan`, as if its resize were asked for."""
    spec = pod.get("spec") or {}
    use_spec = resize_status(pod).state is not ResizeState.INFEASIBLE or plan is not None
    planned = {c.name: c for c in plan.containers} if plan else {}

    def counted(container: Json, status: Json | None) -> Amounts:
        change = planned.get(str(container.get("name")))
        if change is None:
            return _container_effective(container, status, use_spec)
        # the new spec replaces the old one in the max
        in_flight = _container_effective(container, status, use_spec=False)
        return in_flight.larger(change.request_amounts())

    statuses = container_statuses(pod)  # names are unique across both kinds of container
    app = [counted(c, statuses.get(str(c.get("name")))) for c in spec.get("containers") or []]
    sidecars: list[Amounts] = []
    plain: list[Amounts] = []
    for container in spec.get("initContainers") or []:
        if is_native_sidecar(container):  # resizable: the same max rule
            sidecars.append(counted(container, statuses.get(str(container.get("name")))))
        else:  # runs beside the sidecars started before it (KEP-753)
            plain.append(sum_amounts(sidecars) + to_amounts(requests_of(container)))
    overhead = to_amounts(resource_list(spec.get("overhead")))
    total = _pod_total(app, sidecars, plain, overhead)
    return _pod_level(pod, total, overhead, use_spec, plan)


def _pod_level(
    pod: Json, total: Amounts, overhead: Amounts, use_spec: bool, plan: ResizePlan | None
) -> Amounts:
    """A resource the pod requests at pod level counts at that request, the largest of
    spec (or the plan's), applied (`status.resources`) and allocated
    (`status.allocatedResources`, KEP-5419), plus overhead; the rest as its containers."""
    asked = resource_list(((pod.get("spec") or {}).get("resources") or {}).get("requests"))
    if not asked:
        return total
    status = pod.get("status") or {}
    if plan is not None and plan.pod_level is not None:
        spec_amounts = plan.pod_level.request_amounts()
    elif use_spec:
        spec_amounts = to_amounts(asked)
    else:
        spec_amounts = Amounts()
    counted = (
        spec_amounts.larger(
            to_amounts(resource_list((status.get("resources") or {}).get("requests")))
        ).larger(to_amounts(resource_list(status.get("allocatedResources"))))
        + overhead
    )
    return Amounts(
        counted.cpu_millis if "cpu" in asked else total.cpu_millis,
        counted.memory_bytes if "memory" in asked else total.memory_bytes,
    )


@dataclass(frozen=True)
class Fit:
    """Whether the resized pod fits; `reason` names the short resource when it does not.

    `never`: it would not fit even alone on the node (the kubelet's Infeasible); otherwise
    a pod that does not fit only lacks room beside its neighbours for now (Deferred).
    """

    fits: bool
    reason: str = ""
    never: bool = False


class NodeUsage:
    """What the scheduler counts on each node, summed once per pass.

    A pod's fit is its node's total without the pod itself; recomputing every
    neighbour's effective requests for every pod made a pass quadratic in the pods
    per node. `record` recounts a pod whose resize the API server just accepted, so
    the node's next pods see it.
    """

    def __init__(self, pods: Iterable[Json]) -> None:
        self._counted: dict[str, tuple[str, Amounts]] = {}
        self._totals: dict[str, Amounts] = {}
        for pod in pods:
            self.record(pod)

    def record(self, pod: Json) -> None:
        """Count `pod` on its node, replacing an earlier count of the same pod (by uid)."""
        uid = str((pod.get("metadata") or {}).get("uid"))
        if uid in self._counted:
            old_node, old = self._counted.pop(uid)
            self._totals[old_node] = self._totals[old_node] - old
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node or (pod.get("status") or {}).get("phase") in _FINISHED:
            return
        amounts = effective_requests(pod)
        self._counted[uid] = (node, amounts)
        self._totals[node] = self._totals.get(node, Amounts()) + amounts

    def beside(self, pod: Json) -> Amounts:
        """What the other live pods on `pod`'s node are counted for."""
        node = str((pod.get("spec") or {}).get("nodeName"))
        own = self._counted.get(str((pod.get("metadata") or {}).get("uid")))
        total = self._totals.get(node, Amounts())
        return total - own[1] if own else total

    def on(self, node: str, without: Json | None = None) -> Amounts:
        """What the live pods bound to `node` are counted for, `without` one of them."""
        total = self._totals.get(node, Amounts())
        if without is None:
            return total
        own = self._counted.get(str((without.get("metadata") or {}).get("uid")))
        return total - own[1] if own and own[0] == node else total


def fits_beside(pod: Json, plan: ResizePlan, node: Json, used: Amounts) -> Fit:
    """Does `pod` resized by `plan` fit `node` next to `used` (the other pods' count)?"""
    allocatable = to_amounts(resource_list((node.get("status") or {}).get("allocatable")))
    wanted, now = effective_requests(pod, plan), effective_requests(pod)

    def past(room: Amounts, word: str) -> list[str]:
        """Resources growing past `room` (one that does not grow frees room, never takes it)."""
        return [
            f"{resource} needs {wanted.get(resource)}, {max(room.get(resource), 0)} {word}"
            for resource in ("cpu", "memory")
            if wanted.get(resource) > max(room.get(resource), now.get(resource))
        ]

    short = past(allocatable - used, "free")
    if not short:
        return Fit(True)
    node_name = (node.get("metadata") or {}).get("name")
    unit = "(cpu in millicores, memory in bytes)"
    over = past(allocatable, "allocatable")  # past the whole node: no neighbour makes room
    if over:
        return Fit(False, f"never fits node {node_name}: {'; '.join(over)} {unit}", never=True)
    return Fit(False, f"does not fit node {node_name}: {'; '.join(short)} {unit}")


def node_fit(pod: Json, plan: ResizePlan, node: Json, pods_on_node: Iterable[Json]) -> Fit:
    """Does `pod` resized by `plan` fit `node` beside the other live pods bound to it?"""
    return fits_beside(pod, plan, node, NodeUsage(pods_on_node).beside(pod))
