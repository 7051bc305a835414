"""Which VPA controls a pod, and which VPAs a recommender serves (pure functions).

A VPA controls a pod when it lives in the pod's namespace, its targetRef names
the pod's top-most controller (kind and name; apiVersion is not compared, as
upstream), and, where the target's label selector is known, the selector matches
the pod's labels. If several VPAs match, the oldest wins (creationTimestamp, then
name), exactly as upstream, so both stacks agree on who owns a pod.

Recommender selection (`spec.recommenders`) does NOT take part in matching: a VPA
that names another recommender still claims its pods; that recommender, not us,
writes its status. So a recommender first finds the controlling VPA and then asks
`is_served_by`; it must not fall back to a younger VPA it happens to serve.

Resolving owner references to the top-most controller needs API reads (ReplicaSet
-> Deployment); `top_most_controller` walks the chain with a lookup the caller
supplies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tailor.api.crd import DEFAULT_RECOMMENDER_NAME
from tailor.api.meta import LabelSelector, OwnerReference
from tailor.api.vpa import VerticalPodAutoscaler

# Go's zero time: upstream compares unset creation timestamps as the earliest.
_UNSET_CREATION = datetime.min.replace(tzinfo=UTC)
_MAX_OWNER_DEPTH = 16


@dataclass(frozen=True)
class ControllerRef:
    """A controller by kind and name (apiVersion kept for the caller's lookups)."""

    kind: str
    name: str
    api_version: str | None = None


@dataclass(frozen=True)
class PodRef:
    """What matching needs of a pod; `controller` is its top-most controller, if any."""

    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    controller: ControllerRef | None = None
    name: str = ""

    @classmethod
    def of_pod(cls, pod: Mapping[str, Any], controller: ControllerRef | None) -> PodRef:
        """From a pod's API JSON (a pod being created may only have a generateName)."""
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels")
        return cls(
            namespace=str(metadata.get("namespace") or ""),
            labels=dict(labels) if isinstance(labels, Mapping) else {},
            controller=controller,
            name=str(metadata.get("name") or metadata.get("generateName") or ""),
        )


@dataclass(frozen=True)
class VpaCandidate:
    """A VPA with its target's label selector, where known (None: not checked)."""

    vpa: VerticalPodAutoscaler
    selector: LabelSelector | None = None


def vpa_precedence(vpa: VerticalPodAutoscaler) -> tuple[datetime, str]:
    """Sort key: smaller is stronger (older creationTimestamp, then name)."""
    created = vpa.metadata.creation_timestamp or _UNSET_CREATION
    return created, vpa.name


def _as_candidate(entry: VerticalPodAutoscaler | VpaCandidate) -> VpaCandidate:
    return entry if isinstance(entry, VpaCandidate) else VpaCandidate(entry)


def targets_pod(candidate: VpaCandidate, pod: PodRef) -> bool:
    """Whether this VPA's target is the pod's controller (namespace, kind, name, labels)."""
    vpa, controller = candidate.vpa, pod.controller
    if controller is None or vpa.namespace != pod.namespace:
        return False
    target = vpa.spec.target_ref
    if target.kind != controller.kind or target.name != controller.name:
        return False
    return candidate.selector is None or candidate.selector.matches(pod.labels)


def matching_vpas(
    pod: PodRef, vpas: Iterable[VerticalPodAutoscaler | VpaCandidate]
) -> list[VerticalPodAutoscaler]:
    """Every VPA targeting the pod, strongest (oldest) first."""
    matches = [c.vpa for c in map(_as_candidate, vpas) if targets_pod(c, pod)]
    return sorted(matches, key=vpa_precedence)


def controlling_vpa(
    pod: PodRef, vpas: Iterable[VerticalPodAutoscaler | VpaCandidate]
) -> VerticalPodAutoscaler | None:
    """The VPA that controls the pod (the oldest match), or None."""
    matches = matching_vpas(pod, vpas)
    return matches[0] if matches else None


def is_served_by(vpa: VerticalPodAutoscaler, recommender_name: str, is_default: bool) -> bool:
    """Whether a recommender called `recommender_name` writes this VPA's recommendation.

    A VPA naming recommenders is served by the one it names. A VPA naming none
    (or naming "default") is served by the default recommender: the one called
    "default", or ours when it runs with `is_default` to replace upstream's.
    """
    names = vpa.recommender_names()
    if recommender_name in names:
        return True
    acts_as_default = is_default or recommender_name == DEFAULT_RECOMMENDER_NAME
    return acts_as_default and (not names or DEFAULT_RECOMMENDER_NAME in names)


class OwnerReferenceError(ValueError):
    """Owner references the API server would refuse (more than one controller)."""


def controller_reference(owner_references: Sequence[OwnerReference] | None) -> ControllerRef | None:
    """The owner marked `controller: true`, else None.

    The API allows at most one; with two, taking the first would pick a VPA by list order.
    """
    controllers = [owner for owner in owner_references or [] if owner.controller]
    if len(controllers) > 1:
        names = ", ".join(f"{owner.kind}/{owner.name}" for owner in controllers)
        raise OwnerReferenceError(f"more than one owner reference is a controller: {names}")
    if not controllers:
        return None
    owner = controllers[0]
    return ControllerRef(kind=owner.kind, name=owner.name, api_version=owner.api_version)


def top_most_controller(
    start: ControllerRef, parent_of: Callable[[ControllerRef], ControllerRef | None]
) -> ControllerRef:
    """Follow controller owners up from `start` while `parent_of` names one.

    `parent_of` returns the controller of a controller (e.g. ReplicaSet ->
    Deployment) or None where the chain should stop (no owner, or an owner that
    is neither well known nor scalable, as upstream decides). Cycles stop the walk.
    """
    current, seen = start, {start}
    for _ in range(_MAX_OWNER_DEPTH):
        parent = parent_of(current)
        if parent is None or parent in seen:
            break
        current = parent
        seen.add(current)
    return current


def _owner_ref(owners: Iterable[Mapping[str, Any]]) -> ControllerRef | None:
    return controller_reference([OwnerReference.model_validate(o) for o in owners])


Objects = Mapping[tuple[str, str], Mapping[str, Any]]  # by (namespace, name)


def pod_controller(
    pod: Mapping[str, Any], replica_sets: Objects, jobs: Objects | None = None
) -> ControllerRef | None:
    """The pod's top-most controller: a ReplicaSet's Deployment, a Job's CronJob, else its
    direct controller (upstream's controller fetcher walks the same links)."""
    metadata = pod.get("metadata") or {}
    namespace = str(metadata.get("namespace"))
    start = _owner_ref(metadata.get("ownerReferences") or [])
    if start is None:
        return None
    known = {"ReplicaSet": replica_sets, "Job": jobs or {}}

    def parent_of(ref: ControllerRef) -> ControllerRef | None:
        if ref.kind not in known:
            return None
        owner = known[ref.kind].get((namespace, ref.name))
        owners = ((owner or {}).get("metadata") or {}).get("ownerReferences") or []
        return _owner_ref(owners)

    return top_most_controller(start, parent_of)
