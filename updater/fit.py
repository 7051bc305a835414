"""Will a resized pod still fit its node? The scheduler's own accounting (pure).

The kubelet answers a resize that does not fit with Deferred or Infeasible, and
the pod then waits at its old size; asking only for what fits keeps the updater
from filling a node's queue with resizes that cannot happen. The scheduler counts
each container at the largest of its spec, applied (`status.resources`) and
allocated requests, and drops the spec when the pod's resize is Infeasible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from updater.plan import ResizePlan
from updater.pod_counts import PodCount, pod_count
from updater.resources import Amounts, Json, resource_list, to_amounts

_FINISHED = ("Succeeded", "Failed")


def effective_requests(pod: Json, plan: ResizePlan | None = None) -> Amounts:
    """What the scheduler counts for `pod`; with `plan`, as if its resize were asked for."""
    return pod_count(pod).effective(plan)


@dataclass(frozen=True, slots=True)
class Fit:
    """Whether the resized pod fits; `reason` names the short resource when it does not.

    `never`: it would not fit even alone on the node (the kubelet's Infeasible); otherwise
    a pod that does not fit only lacks room beside its neighbours for now (Deferred).
    """

    fits: bool
    reason: str = ""
    never: bool = False


FITS = Fit(True)


class NodeUsage:
    """What the scheduler counts on each node, summed once per pass.

    A pod's fit is its node's total without the pod itself; recomputing every
    neighbour's effective requests for every pod made a pass quadratic in the pods
    per node. `record` recounts a pod whose resize the API server just accepted, so
    the node's next pods see it. Each pod's and node's amounts are read once
    (`count`, `allocatable`): the pass's objects are not changed while it runs.
    """

    def __init__(self, pods: Iterable[Json]) -> None:
        self._counted: dict[str, tuple[str, Amounts]] = {}
        self._totals: dict[str, Amounts] = {}
        self._read: dict[int, tuple[Json, PodCount]] = {}  # by object; it is kept alive
        self._nodes: dict[int, tuple[Json, Amounts]] = {}

        def counted(listed: Json) -> Amounts:
            return self.count(listed).now

        for pod in pods:
            self._place(pod, counted)

    def count(self, pod: Json) -> PodCount:
        """`pod`'s amounts, read once. Raises QuantityError on an unreadable one."""
        found = self._read.get(id(pod))
        if found is None:
            found = self._read[id(pod)] = (pod, pod_count(pod))
        return found[1]

    def allocatable(self, node: Json) -> Amounts:
        """What `node` offers the scheduler, read once."""
        found = self._nodes.get(id(node))
        if found is None:
            found = self._nodes[id(node)] = (node, node_allocatable(node))
        return found[1]

    def record(self, pod: Json) -> None:
        """Count `pod` on its node, replacing an earlier count of the same pod (by uid): the
        API server's answer to a resize, so the node's next pods see it. Read afresh: a
        count derived from the listed pod (only the changed requests read, or the plan's
        amounts taken when the answer is as sent) had to compare the answer with the
        listing first, and cost as much as reading it (about 11 µs a pod either way)."""
        self._place(pod, lambda answer: pod_count(answer).now)

    def _place(self, pod: Json, read: Callable[[Json], Amounts]) -> None:
        uid = str((pod.get("metadata") or {}).get("uid"))
        if uid in self._counted:
            old_node, old = self._counted.pop(uid)
            self._totals[old_node] = self._totals[old_node] - old
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node or (pod.get("status") or {}).get("phase") in _FINISHED:
            return
        amounts = read(pod)
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

    def fit(self, pod: Json, plan: ResizePlan, node: Json) -> Fit:
        """Does `pod` resized by `plan` fit `node` beside the other pods counted there?"""
        room = self.allocatable(node)
        return counted_fit(self.count(pod), plan, node, room, self.beside(pod))


def node_allocatable(node: Json) -> Amounts:
    return to_amounts(resource_list((node.get("status") or {}).get("allocatable")))


def counted_fit(
    count: PodCount, plan: ResizePlan, node: Json, allocatable: Amounts, used: Amounts
) -> Fit:
    """Does the pod counted `count`, resized by `plan`, fit `node` (`allocatable`) next to
    `used` (the other pods' count)?"""
    wanted, now = count.effective(plan), count.now
    free = allocatable - used
    if wanted.cpu_millis <= max(free.cpu_millis, now.cpu_millis) and (
        wanted.memory_bytes <= max(free.memory_bytes, now.memory_bytes)
    ):
        return FITS

    def past(room: Amounts, word: str) -> list[str]:
        """Resources growing past `room` (one that does not grow frees room, never takes it)."""
        return [
            f"{resource} needs {wanted.get(resource)}, {max(room.get(resource), 0)} {word}"
            for resource in ("cpu", "memory")
            if wanted.get(resource) > max(room.get(resource), now.get(resource))
        ]

    short = past(free, "free")
    node_name = (node.get("metadata") or {}).get("name")
    unit = "(cpu in millicores, memory in bytes)"
    over = past(allocatable, "allocatable")  # past the whole node: no neighbour makes room
    if over:
        return Fit(False, f"never fits node {node_name}: {'; '.join(over)} {unit}", never=True)
    return Fit(False, f"does not fit node {node_name}: {'; '.join(short)} {unit}")


def node_fit(pod: Json, plan: ResizePlan, node: Json, pods_on_node: Iterable[Json]) -> Fit:
    """Does `pod` resized by `plan` fit `node` beside the other live pods bound to it?"""
    usage = NodeUsage(pods_on_node)
    return usage.fit(pod, plan, node)
