"""What the cluster allows for a pod: its VPA's mode and policy, its LimitRanges (pure).

With `--vpa`, the updater acts only where a VerticalPodAutoscaler asks for
in-place updates: `InPlace` (resize only) or `InPlaceOrRecreate` (eviction as a
fallback). `Off` and `Initial` leave running pods alone, and `Recreate` (or the
deprecated `Auto`) asks for evictions, which a schedule changing every hour must
not cause. The VPA that controls a pod is found with the rule every component
shares (`tailor.matching`), and so are the HPAs that fight it (`tailor.hpa`): the
resources they scale on are left to them. LimitRanges bind every resize, VPA or
not: the API server applies them to resizes too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError

from tailor.api.limitrange import LimitRange, LimitType, merged_limit_range_item
from tailor.api.vpa import (
    EvictionRequirement,
    PodUpdatePolicy,
    UpdateMode,
    VerticalPodAutoscaler,
)
from tailor.hpa import HpaConflict, conflict_message, contested, hpa_conflicts
from tailor.matching import OwnerReferenceError, PodRef, controlling_vpa, pod_controller
from tailor.node_groups import for_node
from tailor.pods import sized_container_names
from updater.due_targets import Target, without_contested
from updater.plan import PodRules
from updater.recommendations import (
    UpdateRules,
    processed_recommendation,
    recommended_targets,
    update_reason,
)
from updater.resize_status import ResizeState, resize_status
from updater.resources import Json

IN_PLACE_MODES = (UpdateMode.IN_PLACE, UpdateMode.IN_PLACE_OR_RECREATE)


@dataclass(frozen=True)
class Governance:
    """The rules for one pod's resize, whether it may be evicted, or why it is left alone."""

    rules: PodRules
    may_evict: bool = True
    leave_alone: str | None = None
    vpa: VerticalPodAutoscaler | None = None  # the VPA that controls the pod (--vpa)
    recreate: bool = False  # updateMode Recreate (or Auto): updated by eviction, never resized
    conflicts: tuple[HpaConflict, ...] = field(default=())  # HPAs on resources its VPA controls
    node_group: str | None = None  # "label=value": its VPA's figures for the pod's node group

    def contested(self, container: str) -> frozenset[str]:
        """The container's resources an HPA scales on: left as they are."""
        return contested(self.conflicts, container)

    @property
    def hpa_note(self) -> str:
        """What the report says of the resources left to HPAs ("" when none)."""
        if not self.conflicts:
            return ""
        said = conflict_message(self.conflicts)
        return f"left to the HPA (--allow-hpa-conflicts resizes them): {said}"

    @property
    def _update_policy(self) -> PodUpdatePolicy | None:
        return self.vpa.spec.update_policy if self.vpa is not None else None

    @property
    def min_replicas(self) -> int | None:
        """The VPA's updatePolicy.minReplicas, which overrides --min-replicas."""
        policy = self._update_policy
        return policy.min_replicas if policy is not None else None

    @property
    def eviction_requirements(self) -> list[EvictionRequirement]:
        policy = self._update_policy
        return list(policy.eviction_requirements or []) if policy is not None else []


def limit_rules(limit_ranges: Iterable[LimitRange]) -> PodRules:
    """The namespace's LimitRanges merged per type, as the API server checks them."""
    ranges = list(limit_ranges)
    return PodRules(
        container_limit_range=merged_limit_range_item(ranges, LimitType.CONTAINER),
        pod_limit_range=merged_limit_range_item(ranges, LimitType.POD),
    )


def vpa_governance(
    pod: Json,
    vpas: Iterable[VerticalPodAutoscaler],
    replica_sets: Mapping[tuple[str, str], Json],
    limits: PodRules,
    recreate: bool = False,
    hpas: Iterable[Json] | None = None,
    jobs: Mapping[tuple[str, str], Json] | None = None,
    nodes: Mapping[str, Json] | None = None,
) -> Governance:
    """The pod's rules under its controlling VPA, or why the updater leaves it alone.

    With `recreate` (following VPA recommendations), a `Recreate` pod is governed too: it is
    updated by eviction, and the webhook sizes its replacement, as upstream's updater does.
    `hpas` are its namespace's HPAs (None: not checked, --allow-hpa-conflicts). With
    `nodes`, a pod is sized by its node group's recommendation where its VPA has one
    (`tailor.node_groups`: a DaemonSet's pods per instance type).
    """
    try:
        controller = pod_controller(pod, replica_sets, jobs)
    except (OwnerReferenceError, ValidationError) as error:
        return Governance(limits, leave_alone=f"unreadable owner references: {error}")
    reference = PodRef.of_pod(pod, controller)
    vpa = controlling_vpa(reference, vpas)
    if vpa is None:
        return Governance(limits, leave_alone="no VerticalPodAutoscaler controls it")
    mode = vpa.effective_update_mode()
    by_eviction = recreate and mode is UpdateMode.RECREATE
    if mode not in IN_PLACE_MODES and not by_eviction:
        reason = f"VPA {vpa.name} has updateMode {mode}: no in-place updates"
        return Governance(limits, leave_alone=reason)
    rules = PodRules(
        resource_policy=vpa.spec.resource_policy,
        container_limit_range=limits.container_limit_range,
        pod_limit_range=limits.pod_limit_range,
    )
    names = sized_container_names(pod) or None
    conflicts = tuple(hpa_conflicts(vpa, hpas, names)) if hpas is not None else ()
    group = None
    if nodes is not None:
        node = nodes.get(str((pod.get("spec") or {}).get("nodeName")))
        vpa, group = for_node(vpa, node)
    return Governance(
        rules,
        may_evict=mode is not UpdateMode.IN_PLACE,
        vpa=vpa,
        recreate=by_eviction,
        conflicts=conflicts,
        node_group=group,
    )


def pod_targets(
    pod: Json,
    scheduled: Mapping[str, Target] | None,
    governance: Governance,
    now: datetime,
    rules: UpdateRules | None = None,
) -> tuple[Mapping[str, Target], str | None, str]:
    """(targets, why the pod is left alone, why it is updated): the schedule's targets, or
    (with `recommendations`) its VPA's when upstream's updater would update it."""
    if governance.leave_alone:
        return {}, governance.leave_alone, ""
    vpa = governance.vpa
    if scheduled is not None:
        targets: Mapping[str, Target] = scheduled
    else:
        processed = processed_recommendation(vpa, pod, governance.rules) if vpa else {}
        targets = recommended_targets(processed)
        if vpa is None or not targets:
            status = vpa.status if vpa is not None else None
            recommended = status is not None and status.recommendation is not None
            why = "its VPA has no recommendation yet"
            if recommended:  # there is one, but for no container of this pod it may set
                why = "its VPA sets nothing here: its containers are in mode Off or not named"
            return {}, why, ""
    if governance.conflicts:  # what an HPA scales on stays as it is
        targets = without_contested(targets, governance.contested)
        if not targets:
            return {}, f"nothing to change: all of it is {governance.hpa_note}", ""
    if vpa is None or scheduled is not None:
        return targets, None, ""
    reason = update_reason(
        pod,
        vpa,
        now,
        targets,
        governance.contested,
        rules or UpdateRules(),
        processed=processed,
    )
    resizing = resize_status(pod).state is not ResizeState.NONE  # an answer to await or act on
    if reason is None and (governance.recreate or not resizing):
        return {}, "within its VPA's recommendation (upstream's update rules)", ""
    return targets, None, reason or ""
