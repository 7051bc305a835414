"""One pass of the in-place updater: every running pod with a scheduled target, in turn.

Reads the cluster once per pass, decides per pod with the pure modules, and
writes as it goes: a resize accepted on a node is counted at once in the fit
checks of the node's next pods, so one pass never promises a node's room twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from tailor.api.limitrange import LimitRange
from tailor.api.meta import by_namespace, object_key
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.change_budget import CHANGES_PER_DAY, BudgetError, changes_per_day
from tailor.cluster_port import FIELD_MANAGER, Answer, UpdaterCluster
from tailor.events import NoEvents, Recorder
from tailor.hpa import hpas_by_namespace
from tailor.quantity import QuantityError
from tailor.schedule_file import ScheduleRow
from tailor.scope import NamespaceScope
from updater import pressure
from updater.budget import RESIZED_AT, recorded, resized_at
from updater.budget import refusal as budget_refusal
from updater.decide import Action, Decision, NoRoomClock, Policy, decide, recreate_decision
from updater.due_targets import Target, boosted_elsewhere, recommended, why_nothing
from updater.due_targets import scheduled as due_now
from updater.fit import NodeUsage, fits_beside
from updater.governance import Governance, limit_rules, pod_targets, vpa_governance
from updater.hpa_sync import HpaSync, sync_hpas
from updater.others import awaited
from updater.plan import PodRules, ResizePlan, Skipped
from updater.pod_plan import plan_pod_resize
from updater.priority import priority
from updater.rate import EvictionRate
from updater.recommendations import UpdateRules
from updater.replacement import eviction_landing
from updater.report import (
    EVICTED,
    OTHERS_RESIZE,
    REPLACEMENT_WOULD_NOT_FIT,
    RESIZED,
    eviction_refused,
    pending_event,
    record_outcome,
)
from updater.resize_status import resize_status
from updater.resources import Json
from updater.restriction import (
    GROUP_KINDS,
    DisruptionLimits,
    EvictionRestriction,
    WebhookStatus,
    configured_replicas,
    owner_of,
    unmet_eviction_requirements,
)
from updater.unboost import StartupBoost, startup_boost


@dataclass(frozen=True)
class Outcome:
    """What happened to one pod; `applied` is False when the API refused the write."""

    namespace: str
    pod: str
    workload: str
    action: Action
    detail: str
    applied: bool = True
    event: str = ""  # the Event reason recorded on the pod (updater.report), "" for none


class Outcomes(list[Outcome]):
    """A pass's outcomes, one per pod considered; `why_nothing` says why there are none;
    `hpas`: the HPA targets rewritten for VPAs that coordinate (`updater.hpa_sync`)."""

    why_nothing: str = ""
    hpas: tuple[HpaSync, ...] = ()


@dataclass(frozen=True)
class PassOptions:
    """How a pass acts: the eviction policy, which namespaces, and whether writes are dry runs."""

    policy: Policy = field(default_factory=Policy)
    namespaces: frozenset[str] | None = None
    limits: DisruptionLimits = field(default_factory=DisruptionLimits)
    dry_run: bool = False
    use_vpa: bool = False
    recommendations: bool = False  # each pod's VPA recommendation instead of a schedule
    scope: NamespaceScope = field(default_factory=NamespaceScope)
    allow_hpa_conflicts: bool = False  # resize even what an HPA scales on (--allow-hpa-conflicts)
    # why the webhook may be down (None: up), asked before the first eviction of a pass;
    # None: not asked (--no-use-admission-controller-status)
    webhook_down: Callable[[datetime], str | None] | None = None
    update_rules: UpdateRules = field(default_factory=UpdateRules)  # upstream's thresholds
    eviction_rate: EvictionRate = field(default_factory=lambda: EvictionRate(0))  # shared by passes
    no_room: NoRoomClock = field(default_factory=NoRoomClock)  # shared by passes
    changes_per_day: int | None = None  # resizes a pod may take in any 24 h (None: no cap)
    events: Recorder = field(default_factory=NoEvents)  # Kubernetes Events of each outcome
    overwrite_others: bool = (
        False  # resize over another actor's resize (--overwrite-others-resizes)
    )
    memory_pressure: pressure.MemoryPressure | None = None  # raise memory under pressure (PSI)

    def acts_in(self, namespace: str) -> bool:
        """In `-n`'s namespaces (all without it) and within the scope flags."""
        named = self.namespaces is None or namespace in self.namespaces
        return named and self.scope.includes(namespace)


Planned = ResizePlan | Skipped | QuantityError


def _planned(pod: Json, targets: Mapping[str, Target], rules: PodRules) -> Planned:
    try:
        return plan_pod_resize(pod, targets, rules)
    except QuantityError as error:  # the API server validates quantities; kept for safety
        return error


def _decision(
    pod: Json,
    planned: Planned,
    nodes: Mapping[str, Json],
    usage: NodeUsage,
    now: datetime,
    policy: Policy,
    no_room: NoRoomClock,
) -> Decision:
    if isinstance(planned, QuantityError):
        return Decision(Action.NONE, f"unreadable resources: {planned}")
    fit = None
    if isinstance(planned, ResizePlan) and planned.changes:
        node_name = str((pod.get("spec") or {}).get("nodeName"))
        node = nodes.get(node_name)
        if node is None:
            return Decision(Action.NONE, f"node {node_name} not found")
        try:
            fit = fits_beside(pod, planned, node, usage.beside(pod))
        except QuantityError as error:
            return Decision(Action.NONE, f"unreadable resources: {error}")
    uid = str((pod.get("metadata") or {}).get("uid"))
    since = None if fit is None or fit.fits else no_room.since(uid, now)
    return decide(planned, resize_status(pod), fit, now, policy, owner_of(pod) is not None, since)


@dataclass(frozen=True)
class _Candidate:
    """A scheduled, running pod of this pass with what its VPA allows and its plan."""

    pod: Json
    namespace: str
    name: str
    workload: str
    governance: Governance
    targets: Mapping[str, Target]
    planned: Planned
    reason: str = ""  # why upstream's rules update it (VPA recommendations)
    no_eviction: str | None = None  # why it is never evicted, whatever the policy

    def order(self) -> tuple[int, float]:
        """Upstream's priority for pods that change, then the rest in listing order."""
        if isinstance(self.planned, ResizePlan) and self.planned.changes:
            return priority(self.pod, self.planned)
        return (2, 0.0)


class _Governor:
    """Each pod's Governance, from the objects read once per pass."""

    def __init__(
        self, cluster: UpdaterCluster, options: PassOptions, nodes: Mapping[str, Json]
    ) -> None:
        self.nodes = nodes
        ranges = by_namespace(LimitRange.valid_among(cluster.limit_ranges()))
        self.limits = {namespace: limit_rules(found) for namespace, found in ranges.items()}
        use_vpa, evict = options.use_vpa, options.policy.evict
        self.use_vpa, self.recreate = use_vpa, options.recommendations
        self.vpas = VerticalPodAutoscaler.valid_among(cluster.vpas()) if use_vpa else []
        # the HPAs that may fight a VPA (None: not checked); unreadable, the pass fails
        checked = use_vpa and not options.allow_hpa_conflicts
        scope = options.scope
        self.hpas = hpas_by_namespace(cluster.hpas(scope.only), scope) if checked else None
        # a pod's Deployment or CronJob (for its VPA); each group's replicas (for evictions)
        kinds = (["ReplicaSet", "Job"] if use_vpa else []) + (GROUP_KINDS if evict else [])
        self.controllers = {kind: cluster.controllers(kind) for kind in dict.fromkeys(kinds)}

    def of(self, pod: Json, namespace: str) -> Governance:
        limits = self.limits.get(namespace, PodRules())
        if not self.use_vpa:
            return Governance(limits)
        hpas = self.hpas.get(namespace, []) if self.hpas is not None else None
        replica_sets, jobs = self.controllers["ReplicaSet"], self.controllers["Job"]
        return vpa_governance(
            pod, self.vpas, replica_sets, limits, self.recreate, hpas, jobs, self.nodes
        )


def _pod_policy(policy: Policy, governance: Governance) -> Policy:
    if governance.may_evict:
        return policy
    return replace(
        policy, evict=False, no_eviction_reason="its VPA's updateMode InPlace: no eviction"
    )


def _refused(answer: Answer, verb: str) -> str:
    return f"{verb} refused ({answer.status}): {answer.message}"


UNBOOST = "startup CPU boost over"
UNBOOST_NOT_EVICTED = "not evicted: it would come back boosted"


def _unboost(
    pod: Json,
    namespace: str,
    workload: str,
    scheduled: Mapping[str, Target] | None,
    boost: StartupBoost,
    rules: PodRules,
    now: datetime,
) -> _Candidate | Outcome:
    """A boosted pod: left as it is until its boost is over, then resized back, never
    evicted (it would come back boosted). `rules` are its VPA's policy and LimitRanges,
    whatever its mode: the boost ends in mode Off too, back to what the pod asked."""
    name = object_key(pod)[1]
    waiting = boost.waiting(pod, now)
    if waiting is not None:
        return Outcome(namespace, name, workload, Action.NONE, waiting)
    governance = Governance(rules)
    targets = boost.targets(pod, scheduled)
    planned = _planned(pod, targets, governance.rules)
    return _Candidate(
        pod, namespace, name, workload, governance, targets, planned, UNBOOST, UNBOOST_NOT_EVICTED
    )


def _budget_of(governance: Governance, options: PassOptions) -> int | None:
    """The pod's change budget: its VPA's annotation, else --changes-per-day; BudgetError
    when the annotation cannot be read."""
    annotations = governance.vpa.metadata.annotations if governance.vpa is not None else None
    text = (annotations or {}).get(CHANGES_PER_DAY)
    return options.changes_per_day if text is None else changes_per_day(text)


def _within_budget(
    pod: Json, governance: Governance, decision: Decision, now: datetime, options: PassOptions
) -> Decision:
    """A resize the pod's change budget has no room for waits (see `updater.budget`)."""
    try:
        cap = _budget_of(governance, options)
    except BudgetError as error:
        return Decision(Action.NONE, f"{decision.reason}; not resized: {error}")
    why = None if cap is None else budget_refusal(resized_at(pod), now, cap)
    if why is None:
        return decision
    return Decision(Action.NONE, f"{decision.reason}; not resized: {why}")


def _record_resize(cluster: UpdaterCluster, pod: Json, now: datetime, item: _Candidate) -> str:
    """Count the resize on the pod itself (a restart keeps the count), and a pressure raise
    as the floor it is (`updater.pressure`); "" or what failed."""
    annotations = {RESIZED_AT: recorded(resized_at(pod), now)}
    if item.reason.startswith(pressure.PRESSURE) and isinstance(item.planned, ResizePlan):
        annotations[pressure.PRESSURE_RAISED] = pressure.recorded(pod, item.planned, now)
    answer = cluster.annotate(pod, annotations)
    return "" if answer.accepted else f"; {_refused(answer, 'recording the resize')}"


@dataclass
class _Run:
    """What one pass acts with, read once."""

    cluster: UpdaterCluster
    nodes: Mapping[str, Json]
    usage: NodeUsage
    restriction: EvictionRestriction
    webhook: WebhookStatus
    options: PassOptions
    now: datetime

    def _decide(self, item: _Candidate) -> tuple[Decision, str]:
        """The pod's decision and its Event (a pending resize's, or another actor's)."""
        options, pod, governance = self.options, item.pod, item.governance
        policy = _pod_policy(options.policy, governance)
        if item.no_eviction is not None:
            policy = replace(policy, evict=False, no_eviction_reason=item.no_eviction)
        others = None if options.overwrite_others else awaited(pod, item.planned, FIELD_MANAGER)
        if others is not None:
            return Decision(Action.WAIT, others), OTHERS_RESIZE
        if governance.recreate:  # never resized: evicted, and the webhook sizes the new pod
            decision = recreate_decision(item.reason, policy)
        else:
            decision = _decision(
                pod, item.planned, self.nodes, self.usage, self.now, policy, options.no_room
            )
        at_once = item.reason == UNBOOST or item.reason.startswith(pressure.PRESSURE)
        if decision.action is Action.RESIZE and not at_once:
            decision = _within_budget(pod, governance, decision, self.now, options)
        return decision, pending_event(pod, decision.action)

    def act(self, item: _Candidate) -> Outcome:
        """Decide for one pod and write what that takes."""
        pod, governance = item.pod, item.governance
        decision, event = self._decide(item)
        detail, applied = decision.reason, True
        if item.reason == UNBOOST or item.reason.startswith(pressure.PRESSURE):
            detail = f"{item.reason}; {detail}"
        if decision.action is Action.RESIZE and isinstance(item.planned, ResizePlan):
            answer = self.cluster.resize(pod, item.planned.patch(), self.options.dry_run)
            applied = answer.accepted
            if answer.accepted and answer.obj:  # a dry run's answer too: the pass's own count
                self.usage.record(answer.obj)
                event = RESIZED
            elif not answer.accepted:
                detail = _refused(answer, "resize")
            if answer.accepted and not self.options.dry_run:
                detail += _record_resize(self.cluster, pod, self.now, item)
        elif decision.action is Action.EVICT:
            landing = eviction_landing(pod, item.planned, self.nodes, self.usage)
            refusal = (
                unmet_eviction_requirements(pod, item.targets, governance.eviction_requirements)
                or landing
                or self.restriction.refusal(pod, governance.min_replicas)
                or self.webhook.refusal(self.now)
                or self.options.eviction_rate.refusal()
            )
            if refusal is not None:
                decision = Decision(Action.NONE, f"{detail}; not evicted: {refusal}")
                detail = decision.reason
                event = REPLACEMENT_WOULD_NOT_FIT if refusal == landing else event
            else:
                answer = self.cluster.evict(pod, self.options.dry_run)
                applied = answer.accepted
                detail = f"evicted: {detail}" if applied else _refused(answer, "eviction")
                event = EVICTED if applied else eviction_refused(answer.status, event)
                if applied:
                    self.restriction.record(pod)
        if governance.node_group is not None:
            detail = f"{detail} (node group {governance.node_group})"
        if governance.conflicts:
            detail = f"{detail}; {governance.hpa_note}"
        action = decision.action
        return Outcome(item.namespace, item.name, item.workload, action, detail, applied, event)


def _sync_hpas(
    cluster: UpdaterCluster, governor: _Governor, options: PassOptions, now: datetime
) -> list[HpaSync]:
    """The targets of the HPAs whose VPA coordinates with them, after the pass's resizes."""
    if governor.hpas is None:  # not read (no --vpa, or --allow-hpa-conflicts)
        return []
    vpas = [v for v in governor.vpas if options.acts_in(v.namespace)]
    events = NoEvents() if options.dry_run else options.events
    return sync_hpas(
        cluster, vpas, governor.hpas, governor.controllers, events, now, options.dry_run
    )


def follow_once(
    cluster: UpdaterCluster,
    rows: Iterable[ScheduleRow],
    now: datetime,
    options: PassOptions,
) -> Outcomes:
    """Bring every scheduled pod towards its target; one Outcome per pod considered."""
    rows = list(rows)
    pods, nodes = cluster.pods(), cluster.nodes()
    governor = _Governor(cluster, options, nodes)
    restriction = EvictionRestriction(
        pods, configured_replicas(governor.controllers), options.limits
    )
    usage = NodeUsage(pods)
    webhook = WebhookStatus(options.webhook_down)
    outcomes: list[Outcome] = []
    candidates: list[_Candidate] = []
    due = list(
        recommended(pods, options.acts_in)
        if options.recommendations
        else due_now(pods, rows, now, options.acts_in)
    )
    boosted = {id(pod): boost for pod in pods if (boost := startup_boost(pod)) is not None}
    readings = options.memory_pressure.readings() if options.memory_pressure else None
    due += boosted_elsewhere(pods, due, boosted, options.acts_in)
    for pod, namespace, workload, scheduled in due:
        name = object_key(pod)[1]
        boost = boosted.get(id(pod))
        if boost is not None:  # nothing but the end of the boost resizes it
            rules = governor.of(pod, namespace).rules
            ending = _unboost(pod, namespace, workload, scheduled, boost, rules, now)
            if isinstance(ending, _Candidate):
                candidates.append(ending)
            else:
                outcomes.append(ending)
            continue
        governance = governor.of(pod, namespace)
        raising = pressure.plan_pressure_raise(pod, namespace, governance, readings, now)
        if raising is not None:  # before the OOM kill: at once, whatever else is due
            if raising.refused is not None:
                outcomes.append(Outcome(namespace, name, workload, Action.NONE, raising.refused))
            else:
                candidates.append(_Candidate(pod, namespace, name, workload, governance,
                                             raising.targets, raising.planned, raising.reason,
                                             pressure.NOT_EVICTED))  # fmt: skip
            continue
        targets, why_not, reason = pod_targets(
            pod, scheduled, governance, now, options.update_rules
        )
        if why_not is not None:
            outcomes.append(Outcome(namespace, name, workload, Action.NONE, why_not))
            continue
        targets = pressure.floored(pod, targets, now)  # what pressure raised stays for a while
        planned = _planned(pod, targets, governance.rules)
        candidates.append(
            _Candidate(pod, namespace, name, workload, governance, targets, planned, reason)
        )
    run = _Run(cluster, nodes, usage, restriction, webhook, options, now)
    for item in sorted(candidates, key=_Candidate.order):  # stable: ties keep listing order
        outcome = run.act(item)
        outcomes.append(outcome)
        if not options.dry_run:
            record_outcome(
                options.events, item.pod, item.governance.vpa, outcome.event, outcome.detail
            )
    options.no_room.end_pass()
    result = Outcomes(outcomes)
    result.hpas = tuple(_sync_hpas(cluster, governor, options, now))
    if not result:
        result.why_nothing = (
            "no running pod in the namespaces served"
            if options.recommendations
            else why_nothing(pods, rows, now, options.acts_in)
        )
    return result
