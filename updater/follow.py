"""One pass of the in-place updater: every running pod with a scheduled target, in turn.

Reads the cluster once per pass, decides per pod with the pure modules, and
writes as it goes: a resize accepted on a node is counted at once in the fit
checks of the node's next pods, so one pass never promises a node's room twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from tailor.quantity import QuantityError
from tailor.workloads import pod_workload
from updater.decide import Action, Decision, Policy, decide
from updater.fit import node_fit, pods_by_node
from updater.kube import Answer, Cluster
from updater.plan import ResizePlan, plan_resize
from updater.progress import resize_status
from updater.resources import Json
from updater.targets import ScheduleRow, Target, due_targets


@dataclass(frozen=True)
class Outcome:
    """What happened to one pod; `applied` is False when the API refused the write."""

    namespace: str
    pod: str
    workload: str
    action: Action
    detail: str
    applied: bool = True


@dataclass(frozen=True)
class PassOptions:
    """How a pass acts: the eviction policy, which namespaces, and whether writes are dry runs."""

    policy: Policy = field(default_factory=Policy)
    namespaces: frozenset[str] | None = None
    dry_run: bool = False


def has_controller(pod: Json) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(owner.get("controller") for owner in owners)


def _targets_by_workload(
    rows: Iterable[ScheduleRow], now: datetime
) -> Mapping[tuple[str, str], dict[str, Target]]:
    grouped: dict[tuple[str, str], dict[str, Target]] = defaultdict(dict)
    for (namespace, workload, container), target in due_targets(rows, now).items():
        grouped[(namespace, workload)][container] = target
    return grouped


def _live(pod: Json) -> bool:
    metadata, status = pod.get("metadata") or {}, pod.get("status") or {}
    return status.get("phase") == "Running" and not metadata.get("deletionTimestamp")


def _decision(
    pod: Json,
    targets: Mapping[str, Target],
    nodes: Mapping[str, Json],
    on_node: list[Json],
    now: datetime,
    policy: Policy,
) -> tuple[Decision, ResizePlan | None]:
    try:
        plan = plan_resize(pod, targets)
    except QuantityError as error:
        return Decision(Action.NONE, f"unreadable resources: {error}"), None
    node_name = str((pod.get("spec") or {}).get("nodeName"))
    fit = None
    if isinstance(plan, ResizePlan) and plan.changes:
        node = nodes.get(node_name)
        if node is None:
            return Decision(Action.NONE, f"node {node_name} not found"), None
        fit = node_fit(pod, plan, node, on_node)
    decision = decide(plan, resize_status(pod), fit, now, policy, has_controller(pod))
    return decision, plan if isinstance(plan, ResizePlan) else None


def _refused(answer: Answer, verb: str) -> str:
    return f"{verb} refused ({answer.status}): {answer.message}"


def follow_once(
    cluster: Cluster,
    rows: Iterable[ScheduleRow],
    now: datetime,
    options: PassOptions,
) -> list[Outcome]:
    """Bring every scheduled pod towards its target; one Outcome per pod considered."""
    pods, nodes = cluster.pods(), cluster.nodes()
    wanted = _targets_by_workload(rows, now)
    by_node = {name: list(group) for name, group in pods_by_node(pods).items()}
    outcomes: list[Outcome] = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        namespace, workload = str(metadata.get("namespace")), pod_workload(pod)
        targets = wanted.get((namespace, workload))
        if (
            not targets
            or not _live(pod)
            or (options.namespaces and namespace not in options.namespaces)
        ):
            continue
        on_node = by_node.setdefault(str(pod["spec"].get("nodeName")), [])
        decision, plan = _decision(pod, targets, nodes, on_node, now, options.policy)
        detail, applied = decision.reason, True
        if decision.action is Action.RESIZE and plan is not None:
            answer = cluster.resize(pod, plan.patch(), options.dry_run)
            applied = answer.accepted
            if answer.accepted and answer.obj and not options.dry_run:
                on_node[:] = [answer.obj if p is pod else p for p in on_node]
            elif not answer.accepted:
                detail = _refused(answer, "resize")
        elif decision.action is Action.EVICT:
            answer = cluster.evict(pod, options.dry_run)
            applied = answer.accepted
            detail = f"evicted: {detail}" if applied else _refused(answer, "eviction")
        name = str(metadata.get("name"))
        outcomes.append(Outcome(namespace, name, workload, decision.action, detail, applied))
    return outcomes
