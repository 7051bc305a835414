"""One pass of the in-place updater: every running pod with a scheduled target, in turn.

Reads the cluster once per pass, decides per pod with the pure modules, and
writes as it goes: a resize accepted on a node is counted at once in the fit
checks of the node's next pods, so one pass never promises a node's room twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from tailor.api.limitrange import LimitRange
from tailor.api.meta import by_namespace
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.kube import Answer, Cluster
from tailor.quantity import QuantityError
from tailor.schedule_file import ScheduleRow
from tailor.workloads import pod_workload
from updater.decide import Action, Decision, Policy, decide
from updater.fit import NodeUsage, fits_beside
from updater.governance import Governance, limit_rules, vpa_governance
from updater.plan import PodRules, ResizePlan, plan_resize
from updater.progress import resize_status
from updater.resources import Json
from updater.restriction import DisruptionLimits, EvictionRestriction, configured_replicas
from updater.targets import Target, due_targets


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
    limits: DisruptionLimits = field(default_factory=DisruptionLimits)
    dry_run: bool = False
    use_vpa: bool = False


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
    usage: NodeUsage,
    now: datetime,
    policy: Policy,
    rules: PodRules,
) -> tuple[Decision, ResizePlan | None]:
    try:
        plan = plan_resize(pod, targets, rules)
        fit = None
        if isinstance(plan, ResizePlan) and plan.changes:
            node_name = str((pod.get("spec") or {}).get("nodeName"))
            node = nodes.get(node_name)
            if node is None:
                return Decision(Action.NONE, f"node {node_name} not found"), None
            fit = fits_beside(pod, plan, node, usage.beside(pod))
    except QuantityError as error:  # the API server validates quantities; kept for safety
        return Decision(Action.NONE, f"unreadable resources: {error}"), None
    decision = decide(plan, resize_status(pod), fit, now, policy, has_controller(pod))
    return decision, plan if isinstance(plan, ResizePlan) else None


class _Governor:
    """Each pod's Governance, from the objects read once per pass."""

    def __init__(self, cluster: Cluster, use_vpa: bool, evict: bool) -> None:
        ranges = by_namespace(LimitRange.valid_among(cluster.limit_ranges()))
        self.limits = {namespace: limit_rules(found) for namespace, found in ranges.items()}
        self.use_vpa = use_vpa
        self.vpas = VerticalPodAutoscaler.valid_among(cluster.vpas()) if use_vpa else []
        # a pod's Deployment (for its VPA) and each ReplicaSet's replicas (for evictions)
        self.replica_sets = cluster.replica_sets() if use_vpa or evict else {}

    def of(self, pod: Json, namespace: str) -> Governance:
        limits = self.limits.get(namespace, PodRules())
        if not self.use_vpa:
            return Governance(limits)
        return vpa_governance(pod, self.vpas, self.replica_sets, limits)


def _pod_policy(policy: Policy, governance: Governance) -> Policy:
    if governance.may_evict:
        return policy
    return replace(
        policy, evict=False, no_eviction_reason="its VPA's updateMode InPlace: no eviction"
    )


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
    governor = _Governor(cluster, options.use_vpa, options.policy.evict)
    restriction = EvictionRestriction(
        pods, configured_replicas(governor.replica_sets), options.limits
    )
    wanted = _targets_by_workload(rows, now)
    usage = NodeUsage(pods)
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
        name = str(metadata.get("name"))
        governance = governor.of(pod, namespace)
        if governance.leave_alone:
            outcomes.append(Outcome(namespace, name, workload, Action.NONE, governance.leave_alone))
            continue
        policy = _pod_policy(options.policy, governance)
        decision, plan = _decision(pod, targets, nodes, usage, now, policy, governance.rules)
        detail, applied = decision.reason, True
        if decision.action is Action.RESIZE and plan is not None:
            answer = cluster.resize(pod, plan.patch(), options.dry_run)
            applied = answer.accepted
            if answer.accepted and answer.obj and not options.dry_run:
                usage.record(answer.obj)
            elif not answer.accepted:
                detail = _refused(answer, "resize")
        elif decision.action is Action.EVICT:
            refusal = restriction.refusal(pod, governance.min_replicas)
            if refusal is not None:
                decision = Decision(Action.NONE, f"{detail}; not evicted: {refusal}")
                detail = decision.reason
            else:
                answer = cluster.evict(pod, options.dry_run)
                applied = answer.accepted
                detail = f"evicted: {detail}" if applied else _refused(answer, "eviction")
                if applied:
                    restriction.record(pod)
        outcomes.append(Outcome(namespace, name, workload, decision.action, detail, applied))
    return outcomes
