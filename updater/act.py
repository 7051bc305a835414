"""How one pass of the in-place updater acts on each of its pods, in turn.

A `Candidate` is a pod with its targets and resize plan; `Run.act` decides for it
(its node's room, its change budget, another actor's resize in flight, the eviction
policy and restrictions) and writes what that takes: the resize, counted at once in
the node's usage so the node's next pods see it, or the eviction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from tailor.change_budget import CHANGES_PER_DAY, BudgetError, changes_per_day
from tailor.cluster_port import FIELD_MANAGER, Answer, UpdaterCluster
from tailor.quantity import QuantityError
from updater import pressure
from updater.budget import RESIZED_AT, recorded, resized_at
from updater.budget import refusal as budget_refusal
from updater.decide import Action, Decision, NoRoomClock, Policy, decide, recreate_decision
from updater.due_targets import Target
from updater.fit import NodeUsage
from updater.governance import Governance
from updater.others import awaited
from updater.pass_options import Outcome, PassOptions
from updater.plan import PodRules, ResizePlan, Skipped
from updater.pod_plan import plan_pod_resize
from updater.priority import Rank, priority
from updater.replacement import eviction_landing
from updater.report import (
    EVICTED,
    OTHERS_RESIZE,
    REPLACEMENT_WOULD_NOT_FIT,
    RESIZED,
    eviction_refused,
    pending_event,
)
from updater.resize_status import resize_status
from updater.resources import Json
from updater.restriction import (
    EvictionRestriction,
    WebhookStatus,
    owner_of,
    unmet_eviction_requirements,
)

Planned = ResizePlan | Skipped | QuantityError


def checked_plan(pod: Json, targets: Mapping[str, Target], rules: PodRules) -> Planned:
    """The pod's resize plan, or the QuantityError that kept it from one."""
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
            fit = usage.fit(pod, planned, node)
        except QuantityError as error:
            return Decision(Action.NONE, f"unreadable resources: {error}")
    uid = str((pod.get("metadata") or {}).get("uid"))
    since = None if fit is None or fit.fits else no_room.since(uid, now)
    return decide(planned, resize_status(pod), fit, now, policy, owner_of(pod) is not None, since)


@dataclass(frozen=True, slots=True)
class Candidate:
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
    rank: Rank | None = None  # its priority, when its plan's was found already

    def order(self) -> Rank:
        """Upstream's priority for pods that change, then the rest in listing order."""
        if isinstance(self.planned, ResizePlan) and self.planned.changes:
            return self.rank if self.rank is not None else priority(self.pod, self.planned)
        return (2, 0.0)


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


def budget_of(governance: Governance, options: PassOptions) -> int | None:
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
        cap = budget_of(governance, options)
    except BudgetError as error:
        return Decision(Action.NONE, f"{decision.reason}; not resized: {error}")
    why = None if cap is None else budget_refusal(resized_at(pod), now, cap)
    if why is None:
        return decision
    return Decision(Action.NONE, f"{decision.reason}; not resized: {why}")


def _record_resize(cluster: UpdaterCluster, pod: Json, now: datetime, item: Candidate) -> str:
    """Count the resize on the pod itself (a restart keeps the count), and a pressure raise
    as the floor it is (`updater.pressure`); "" or what failed."""
    annotations = {RESIZED_AT: recorded(resized_at(pod), now)}
    if item.reason.startswith(pressure.PRESSURE) and isinstance(item.planned, ResizePlan):
        annotations[pressure.PRESSURE_RAISED] = pressure.recorded(pod, item.planned, now)
    answer = cluster.annotate(pod, annotations)
    return "" if answer.accepted else f"; {_refused(answer, 'recording the resize')}"


@dataclass
class Run:
    """What one pass acts with, read once."""

    cluster: UpdaterCluster
    nodes: Mapping[str, Json]
    usage: NodeUsage
    restriction: EvictionRestriction
    webhook: WebhookStatus
    options: PassOptions
    now: datetime

    def _decide(self, item: Candidate) -> tuple[Decision, str]:
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

    def act(self, item: Candidate) -> Outcome:
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
