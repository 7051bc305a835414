"""One pass of the in-place updater: every running pod with a scheduled target, in turn.

Reads the cluster once per pass, decides per pod with the pure modules, and
writes as it goes: a resize accepted on a node is counted at once in the fit
checks of the node's next pods, so one pass never promises a node's room twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from tailor.api.limitrange import LimitRange
from tailor.api.meta import by_namespace, object_key
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.cluster_port import UpdaterCluster
from tailor.events import NoEvents
from tailor.hpa import hpas_by_namespace
from tailor.schedule_file import ScheduleRow
from updater import pressure
from updater.act import UNBOOST, UNBOOST_NOT_EVICTED, Candidate, Run, checked_plan
from updater.collector import collector_paused
from updater.decide import Action
from updater.due_targets import Target, boosted_elsewhere, recommended, why_nothing
from updater.due_targets import scheduled as due_now
from updater.fit import NodeUsage
from updater.governance import Governance, limit_rules, pod_targets, vpa_governance
from updater.hpa_sync import HpaSync, sync_hpas
from updater.pass_options import Outcome, Outcomes, PassOptions
from updater.plan import PodRules
from updater.plans import Plans
from updater.report import record_outcome
from updater.resources import Json
from updater.restriction import GROUP_KINDS, EvictionRestriction, WebhookStatus, configured_replicas
from updater.unboost import StartupBoost, startup_boost

__all__ = ["Outcome", "Outcomes", "PassOptions", "follow_once"]


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
        self._by_namespace: dict[str, Governance] = {}  # without --vpa: one per namespace

    def of(self, pod: Json, namespace: str) -> Governance:
        if not self.use_vpa:
            found = self._by_namespace.get(namespace)
            if found is None:
                found = Governance(self.limits.get(namespace, PodRules()))
                self._by_namespace[namespace] = found
            return found
        limits = self.limits.get(namespace, PodRules())
        hpas = self.hpas.get(namespace, []) if self.hpas is not None else None
        replica_sets, jobs = self.controllers["ReplicaSet"], self.controllers["Job"]
        return vpa_governance(
            pod, self.vpas, replica_sets, limits, self.recreate, hpas, jobs, self.nodes
        )


def _unboost(
    pod: Json,
    namespace: str,
    workload: str,
    scheduled: Mapping[str, Target] | None,
    boost: StartupBoost,
    rules: PodRules,
    now: datetime,
) -> Candidate | Outcome:
    """A boosted pod: left as it is until its boost is over, then resized back, never
    evicted (it would come back boosted). `rules` are its VPA's policy and LimitRanges,
    whatever its mode: the boost ends in mode Off too, back to what the pod asked."""
    name = object_key(pod)[1]
    waiting = boost.waiting(pod, now)
    if waiting is not None:
        return Outcome(namespace, name, workload, Action.NONE, waiting)
    governance = Governance(rules)
    targets = boost.targets(pod, scheduled)
    planned = checked_plan(pod, targets, governance.rules)
    return Candidate(
        pod, namespace, name, workload, governance, targets, planned, UNBOOST, UNBOOST_NOT_EVICTED
    )


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
    with collector_paused():
        return _follow(cluster, rows, now, options, pods, governor)


def _follow(
    cluster: UpdaterCluster,
    rows: list[ScheduleRow],
    now: datetime,
    options: PassOptions,
    pods: list[Json],
    governor: _Governor,
) -> Outcomes:
    """The pass over `pods`, as listed, with the objects the governor read."""
    nodes = governor.nodes
    restriction = EvictionRestriction(
        pods, configured_replicas(governor.controllers), options.limits
    )
    usage = NodeUsage(pods)
    webhook = WebhookStatus(options.webhook_down)
    outcomes: list[Outcome] = []
    candidates: list[Candidate] = []
    due = list(
        recommended(pods, options.acts_in)
        if options.recommendations
        else due_now(pods, rows, now, options.acts_in)
    )
    boosted = {id(pod): boost for pod in pods if (boost := startup_boost(pod)) is not None}
    readings = options.memory_pressure.readings() if options.memory_pressure else None
    due += boosted_elsewhere(pods, due, boosted, options.acts_in)
    plans = Plans()  # a workload's replicas share one plan
    for pod, namespace, workload, scheduled in due:
        name = object_key(pod)[1]
        boost = boosted.get(id(pod))
        if boost is not None:  # nothing but the end of the boost resizes it
            rules = governor.of(pod, namespace).rules
            ending = _unboost(pod, namespace, workload, scheduled, boost, rules, now)
            if isinstance(ending, Candidate):
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
                candidates.append(Candidate(pod, namespace, name, workload, governance,
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
        planned, rank = plans.plan(pod, targets, governance.rules)
        candidates.append(Candidate(pod, namespace, name, workload, governance, targets,
                                    planned, reason, rank=rank))  # fmt: skip
    run = Run(cluster, nodes, usage, restriction, webhook, options, now)
    for item in sorted(candidates, key=Candidate.order):  # stable: ties keep listing order
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
