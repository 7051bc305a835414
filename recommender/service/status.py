"""What the recommender writes into each VPA's status (pure).

A VPA is ours when it controls at least one pod (the oldest VPA targeting the
pod's top-most controller, `tailor.matching`) and names us, or names no
recommender while we run as the default. Its recommendation is the model's rows
for the workloads of its pods, clamped to its resource policy as upstream does
(`tailor.capping.apply_resource_policy`), with upstream's two conditions, and ours,
HorizontalAutoscalerConflict, when the HPAs could be read (`tailor.hpa`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
from pydantic import ValidationError

from tailor.api.meta import ResourceList
from tailor.api.vpa import (
    ConditionStatus,
    ConditionType,
    RecommendedContainerResources,
    RecommendedPodResources,
    VerticalPodAutoscaler,
    VerticalPodAutoscalerCondition,
    VerticalPodAutoscalerStatus,
)
from tailor.capping import apply_resource_policy
from tailor.hpa import HPA_CONFLICT_CONDITION, HpaConflict, conflict_message
from tailor.matching import (
    OwnerReferenceError,
    PodRef,
    controlling_vpa,
    is_served_by,
    pod_controller,
)
from tailor.pod_level import POD_LEVEL_CONDITION, pod_level_message, sets_pod_level_resources
from tailor.pods import sized_container_names
from tailor.workloads import pod_workload

Json = Mapping[str, Any]
Condition = tuple[str, bool, str]  # type, status, message
BOUNDS = (("target", "target"), ("lower_bound", "lower"), ("upper_bound", "upper"))
# the model's rows, one per container: keys, then each resource's bounds
ROW_COLUMNS = ["namespace", "workload", "container"] + [
    f"{r}_{bound}" for r in ("cpu", "memory") for _, bound in BOUNDS
]


@dataclass(frozen=True)
class OwnSettings:
    """What a VPA's settings annotation came to: `problem` None when it was applied."""

    annotation: str
    problem: str | None = None


@dataclass
class ServedVpa:
    """One VPA we write, with the workloads and containers of the pods it controls."""

    vpa: VerticalPodAutoscaler
    workloads: set[str] = field(default_factory=set)
    containers: set[str] = field(default_factory=set)
    pod_level: bool = False  # some pod sets spec.resources (`tailor.pod_level`)
    pods: set[str] = field(default_factory=set)  # their names (grouped by node: node_groups)


def served_vpas(
    vpas: Iterable[VerticalPodAutoscaler],
    pods: Iterable[Json],
    replica_sets: Mapping[tuple[str, str], Json],
    recommender_name: str,
    is_default: bool,
    jobs: Mapping[tuple[str, str], Json] | None = None,
) -> list[ServedVpa]:
    """The VPAs we recommend for, each with what its pods run (empty: no pod matched)."""
    candidates = list(vpas)
    served = {
        (v.namespace, v.name): ServedVpa(v)
        for v in candidates
        if is_served_by(v, recommender_name, is_default)
    }
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        try:
            reference = PodRef.of_pod(pod, pod_controller(pod, replica_sets, jobs))
            vpa = controlling_vpa(reference, candidates)
        except (OwnerReferenceError, ValidationError):
            continue  # the API server refuses such pods; a stray one matches nothing
        entry = served.get((vpa.namespace, vpa.name)) if vpa else None
        if entry is None:
            continue
        entry.workloads.add(pod_workload(pod))
        entry.pods.add(str((pod.get("metadata") or {}).get("name", "")))
        entry.containers.update(sized_container_names(pod))
        entry.pod_level = entry.pod_level or sets_pod_level_resources(pod)
    return list(served.values())


def _amounts(row: Mapping[str, Any], bound: str) -> ResourceList:
    cpu, memory = row.get(f"cpu_{bound}"), row.get(f"memory_{bound}")
    return ResourceList.from_amounts(
        None if cpu is None or not math.isfinite(cpu) else cpu,
        None if memory is None or not math.isfinite(memory) else memory,
    )


def _rows_of(entry: ServedVpa, rows: pd.DataFrame, containers: Iterable[str]) -> pd.DataFrame:
    """The model's rows of this VPA's workloads, for `containers`."""
    return rows[
        (rows["namespace"] == entry.vpa.namespace)
        & rows["workload"].isin(sorted(entry.workloads))
        & rows["container"].isin(sorted(containers))
    ]


def container_recommendations(
    entry: ServedVpa, rows: pd.DataFrame
) -> list[RecommendedContainerResources]:
    """The model's rows for this VPA's pods, largest per container across its workloads."""
    mine = _rows_of(entry, rows, entry.containers)
    numeric = [f"{r}_{bound}" for r in ("cpu", "memory") for _, bound in BOUNDS]
    merged = mine.groupby("container", sort=True)[numeric].max()
    recommendations = []
    for container, row in merged.iterrows():
        values = {str(name): value for name, value in row.items()}
        fields = {name: _amounts(values, bound) for name, bound in BOUNDS}
        if not fields["target"]:
            continue  # nothing measured for this container yet
        recommendations.append(
            RecommendedContainerResources(container_name=str(container), **fields)
        )
    return apply_resource_policy(recommendations, entry.vpa.spec.resource_policy)


# a condition's message is read in `kubectl describe`; an odd container count stays readable
_MESSAGE_LIMIT = 4000


def explanation(entry: ServedVpa, rows: pd.DataFrame, containers: Iterable[str]) -> str:
    """What the model says about each recommended container, for RecommendationProvided's
    message: `kubectl describe vpa` then shows why, without reading our logs."""
    if "explanation" not in rows.columns:
        return ""  # upstream's model explains nothing, as upstream's recommender
    mine = _rows_of(entry, rows, containers)
    parts = []
    for container, group in mine.groupby("container", sort=True):
        said = sorted({str(text) for text in group["explanation"] if isinstance(text, str)})
        if said:
            parts.append(f"{container}: " + " / ".join(said))
    return _limited("; ".join(parts))


def _limited(message: str) -> str:
    if len(message) > _MESSAGE_LIMIT:
        message = message[: _MESSAGE_LIMIT - 1] + "…"
    return message


def _conditions(
    entry: ServedVpa, now: datetime, *wanted: Condition
) -> list[VerticalPodAutoscalerCondition]:
    """(type, status, message) as conditions. As upstream's recommender does, a condition
    whose status is what the VPA already says keeps its lastTransitionTime: the time says
    when it last changed, not when we last looked."""
    before = entry.vpa.status
    conditions = []
    for kind, status, message in wanted:
        state = ConditionStatus.TRUE if status else ConditionStatus.FALSE
        old = before.condition(kind) if before is not None else None
        since = old.last_transition_time if old is not None and old.status == state else None
        conditions.append(
            VerticalPodAutoscalerCondition(
                type=kind,
                status=state,
                last_transition_time=since or now,
                message=message or None,
            )
        )
    return conditions


def _conflict(conflicts: list[HpaConflict] | None) -> tuple[Condition, ...]:
    """The HorizontalAutoscalerConflict condition; none when the HPAs could not be read."""
    if conflicts is None:
        return ()
    return ((HPA_CONFLICT_CONDITION, bool(conflicts), _limited(conflict_message(conflicts))),)


def _pod_level(
    entry: ServedVpa, recommendations: list[RecommendedContainerResources]
) -> tuple[Condition, ...]:
    """PodLevelResources when its pods set spec.resources and it has a recommendation: the
    pod-level figure, which the status has no field for."""
    if not (entry.pod_level and recommendations):
        return ()
    targets = {r.container_name or "": r.target or ResourceList() for r in recommendations}
    return ((POD_LEVEL_CONDITION, True, pod_level_message(targets, sorted(entry.containers))),)


def _unsupported(entry: ServedVpa, problem: str, now: datetime, *more: Condition) -> dict[str, Any]:
    """A VPA whose own settings cannot be read: ConfigUnsupported says why, and its last
    recommendation and its other conditions stay as they were."""
    fresh = _conditions(entry, now, ("ConfigUnsupported", True, _limited(problem)), *more)
    renewed = {condition.type for condition in fresh}
    before = entry.vpa.status.conditions if entry.vpa.status is not None else None
    kept = [condition for condition in before or [] if condition.type not in renewed]
    return VerticalPodAutoscalerStatus(conditions=[*kept, *fresh]).to_api()


def vpa_status(
    entry: ServedVpa,
    rows: pd.DataFrame,
    now: datetime,
    conflicts: list[HpaConflict] | None = None,
    own: OwnSettings | None = None,
    target_problem: str | None = None,
) -> dict[str, Any]:
    """The status JSON to merge into the VPA: recommendation and conditions.

    `conflicts` are the HPA conflicts of its VPA (`tailor.hpa.hpa_conflicts`), None when
    the HPAs could not be read: the condition is then left out rather than guessed. `own`:
    what became of the VPA's settings annotation (None: it has none), said by the
    condition ConfigUnsupported, as upstream's recommender says an unsupported config;
    `target_problem`: why its targetRef can match no pod (`recommender.service.target_refs`),
    said by the same condition."""
    if own is not None and own.problem is not None:
        return _unsupported(entry, own.problem, now, *_conflict(conflicts))
    config: tuple[Condition, ...] = ()
    if target_problem:
        config = (("ConfigUnsupported", True, _limited(target_problem)),)
    elif own is not None:  # its settings annotation is fine: said so
        config = (("ConfigUnsupported", False, ""),)
    kept = entry.vpa.status.recommendation if entry.vpa.status is not None else None
    has_kept = kept is not None and bool(kept.container_recommendations)
    matched = bool(entry.workloads)
    recommendations = container_recommendations(entry, rows) if matched else []
    provided = bool(recommendations)
    named = [r.container_name for r in recommendations if r.container_name]
    # Nothing to recommend from this pass (no pod, or no history read for its pods): upstream
    # keeps recommending from the states its pods left, so a Deployment scaled to zero, or a
    # Prometheus briefly empty, keeps the recommendation the next pod is admitted with.
    keep = not provided and has_kept
    said = explanation(entry, rows, named) if matched else ""
    if keep and matched:
        said = "no usage history read for its pods this pass: the last recommendation is kept"
    conditions = _conditions(
        entry,
        now,
        ("RecommendationProvided", provided or keep, said),
        ("NoPodsMatched", not matched, "" if matched else "No pods match this VPA object"),
        *_conflict(conflicts),
        *config,
        *_pod_level(entry, recommendations),
    )
    status = VerticalPodAutoscalerStatus(
        recommendation=RecommendedPodResources(container_recommendations=recommendations)
        if provided
        else None,
        conditions=conditions,
    ).to_api()
    return status if keep else {"recommendation": None, **status}


# The conditions this recommender sets: a pass says each of them, or leaves it out to clear
# it. Any other type on a VPA is another controller's, and is kept as that writer left it.
OWN_CONDITIONS = frozenset(
    {
        ConditionType.RECOMMENDATION_PROVIDED,
        ConditionType.LOW_CONFIDENCE,
        ConditionType.NO_PODS_MATCHED,
        ConditionType.CONFIG_UNSUPPORTED,
        ConditionType.CONFIG_DEPRECATED,
        HPA_CONFLICT_CONDITION,
        POD_LEVEL_CONDITION,
    }
)


def merged_status(current: Json | None, ours: Json) -> dict[str, Any]:
    """The status to write over `current` (the VPA's as just read): our fields replace
    theirs, our condition types are ours alone, and every other field and condition stays
    as its writer left it (a merge patch would replace the whole conditions list)."""
    merged = {**(current or {}), **ours}
    theirs = [
        condition
        for condition in (current or {}).get("conditions") or []
        if isinstance(condition, Mapping) and condition.get("type") not in OWN_CONDITIONS
    ]
    mine = [c for c in ours.get("conditions") or [] if c.get("type") in OWN_CONDITIONS]
    merged["conditions"] = [*theirs, *mine]
    return merged
