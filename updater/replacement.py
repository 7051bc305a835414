"""Would an evicted pod's replacement land? The scheduler's view of every node (pure).

Evicting a running pod to give it a larger size trades it for a Pending one when no
node has room for the new size: an outage where there was a working pod. Before
such an eviction the updater asks what the scheduler would: a node that is
schedulable, whose labels match the pod's nodeSelector, whose NoSchedule and
NoExecute taints the pod tolerates, and whose allocatable minus the requests of the
pods bound to it (the evicted pod's own no longer counted) holds the new requests.
Required node affinity and topology spread are not read: a replacement they keep
off every node still goes Pending (the report names what was checked).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from updater.fit import NodeUsage, effective_requests
from updater.plan import ResizePlan
from updater.resources import Amounts, Json, resource_list, to_amounts

UNIT = "(cpu in millicores, memory in bytes)"


@dataclass(frozen=True)
class Landing:
    """Whether some node takes the replacement; `reason` says why none does."""

    fits: bool
    node: str = ""
    reason: str = ""


def _tolerates(toleration: Mapping[str, object], taint: Mapping[str, object]) -> bool:
    """The API's ToleratesTaint: an empty key with Exists matches every taint."""
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    if key and key != taint.get("key"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return bool(key) and toleration.get("value", "") == taint.get("value", "")


def untolerated_taint(pod: Json, node: Json) -> str | None:
    """The first NoSchedule / NoExecute taint of `node` the pod does not tolerate."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            value = f"={taint['value']}" if taint.get("value") else ""
            return f"{taint.get('key')}{value}:{taint.get('effect')}"
    return None


def _selector_mismatch(pod: Json, node: Json) -> str | None:
    wanted = (pod.get("spec") or {}).get("nodeSelector") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in wanted.items():
        if labels.get(key) != value:
            return f"nodeSelector {key}={value}"
    return None


def replacement_requests(pod: Json, plan: ResizePlan) -> Amounts:
    """What the replacement asks for: the pod's requests with the plan's applied (the
    webhook sizes it so), without the old pod's in-flight amounts."""
    fresh = {**pod, "status": {}}
    return effective_requests(fresh, plan)


def where_it_lands(
    pod: Json, plan: ResizePlan, nodes: Mapping[str, Json], usage: NodeUsage
) -> Landing:
    """The first node (by name) that takes the replacement, or why none does."""
    wanted = replacement_requests(pod, plan)
    why: list[str] = []
    own_node = (pod.get("spec") or {}).get("nodeName")
    for name in sorted(nodes):
        node = nodes[name]
        problem = _refusal(pod, node, wanted, usage.on(name, pod if name == own_node else None))
        if problem is None:
            return Landing(True, name)
        why.append(f"{name}: {problem}")
    asked = f"cpu {wanted.cpu_millis}m, memory {wanted.memory_bytes}"
    listed = "; ".join(why) if why else "no nodes"
    return Landing(False, reason=f"the replacement ({asked}) would fit no node: {listed} {UNIT}")


def _refusal(pod: Json, node: Json, wanted: Amounts, used: Amounts) -> str | None:
    if (node.get("spec") or {}).get("unschedulable"):
        return "unschedulable"
    mismatch = _selector_mismatch(pod, node)
    if mismatch:
        return f"does not match {mismatch}"
    taint = untolerated_taint(pod, node)
    if taint:
        return f"taint {taint} not tolerated"
    free = to_amounts(resource_list((node.get("status") or {}).get("allocatable"))) - used
    short = [
        f"{resource} {max(free.get(resource), 0)} free"
        for resource in ("cpu", "memory")
        if wanted.get(resource) > free.get(resource)
    ]
    return ", ".join(short) if short else None


def grows(pod: Json, plan: ResizePlan) -> bool:
    """Whether the plan asks for more of some resource than the pod has now."""
    now, then = effective_requests(pod), replacement_requests(pod, plan)
    return any(then.get(resource) > now.get(resource) for resource in ("cpu", "memory"))


def eviction_landing(
    pod: Json, planned: object, nodes: Mapping[str, Json], usage: NodeUsage
) -> str | None:
    """Why an eviction for a larger size would leave the pod Pending, or None (not larger,
    or some node takes the replacement)."""
    if not isinstance(planned, ResizePlan) or not planned.changes or not grows(pod, planned):
        return None
    landing = where_it_lands(pod, planned, nodes, usage)
    return None if landing.fits else landing.reason
