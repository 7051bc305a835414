"""The JSON patch that gives a pod being created its VPA's recommendation (pure).

A pod is sized once, at creation, so this is where `Initial` and every other mode
but `Off` take effect (upstream's admission controller). The amounts go through the
pipeline every VPA write shares: `tailor.capping` (the VPA's resource policy, the
namespace's Pod and Container LimitRanges, RequestsOnly capped at the current
limit) and `tailor.limits` (limits keep their ratio to the request, so a
Guaranteed pod stays Guaranteed). Only cpu and memory are written, and only where
the value changes; containers without a recommendation are not touched. Native
sidecars (init containers with `restartPolicy: Always`, `tailor.pods`) are sized as
app containers are; plain init containers are left as written.

The patch also records what it did in two annotations upstream's tools read:
`vpaObservedContainers` (the pod's container names) and `vpaUpdates` ("Pod
resources updated by web: container 0: cpu request, memory request").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from admission.boost import boost_container
from admission.json_patch import add_operation, json_pointer, stanza_operations
from admission.pod_level import own_only, pod_level_patch, stanza_of
from tailor.api.limitrange import LimitRange, LimitRangeItem, LimitType, merged_limit_range_item
from tailor.api.meta import RESOURCE_CPU, ResourceList
from tailor.api.vpa import UpdateMode, VerticalPodAutoscaler
from tailor.capping import cap_recommendations_for_pod
from tailor.hpa import HpaConflict, conflict_message, contested
from tailor.limits import (
    ContainerResources,
    fit_pod_limit_ratio,
    limits_follow,
    new_container_resources,
)
from tailor.pods import APP_FIELD, INIT_FIELD, SizedContainer, sized_containers
from tailor.quantity import Quantity, QuantityError
from tailor.startup_boost import BOOST_ANNOTATION, BoostedCpu, BoostRecord

Json = Mapping[str, Any]

UPDATES_ANNOTATION = "vpaUpdates"
OBSERVED_CONTAINERS_ANNOTATION = "vpaObservedContainers"
# ours, not upstream's: which HPA kept which resources as the pod asked
HPA_ANNOTATION = "kube-tailor.io/hpa-conflicts"


class PodUnreadable(ValueError):
    """The admitted object is not a pod we can read (no containers, a bad quantity...)."""


@dataclass(frozen=True)
class PodPatch:
    """JSON Patch operations for the pod (empty: admit as written) and what they do."""

    operations: tuple[dict[str, Any], ...] = ()
    reason: str = ""
    vpa: Any = None  # the VerticalPodAutoscaler that sized it (for the Events)


def _mapping_or_none(value: object, what: str) -> Json | None:
    if value is None or isinstance(value, Mapping):
        return value
    raise PodUnreadable(f"{what} is not an object")


def _checked(containers: object, field: str, required: bool) -> None:
    if containers is None and not required:
        return
    if not isinstance(containers, list) or (required and not containers):
        raise PodUnreadable(
            f"spec.{field} is missing or empty" if required else f"spec.{field} is not a list"
        )
    for index, container in enumerate(containers):
        if not isinstance(container, Mapping) or not isinstance(container.get("name"), str):
            raise PodUnreadable(f"spec.{field}[{index}] has no name")
        where = f"spec.{field}[{index}] resources"
        resources = _mapping_or_none(container.get("resources"), where)
        for part in ("requests", "limits"):
            _mapping_or_none((resources or {}).get(part), f"{where}.{part}")


def pod_containers(pod: Json) -> list[SizedContainer]:
    """The containers a VPA sizes (app containers, then native sidecars: `tailor.pods`);
    PodUnreadable when spec.containers is not there as a list, or an entry is unreadable."""
    spec = _mapping_or_none(pod.get("spec"), "spec") or {}
    _checked(spec.get(APP_FIELD), APP_FIELD, required=True)
    _checked(spec.get(INIT_FIELD), INIT_FIELD, required=False)
    return sized_containers(pod)


def _current(container: SizedContainer) -> ContainerResources:
    try:
        return ContainerResources.of_container(container.spec)
    except QuantityError as error:
        raise PodUnreadable(f"spec.{container.field}[{container.index}]: {error}") from None


def _container_operations(
    container: SizedContainer, new: ContainerResources, recommended: Sequence[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The adds for one container's changed amounts, parents first, and their description.

    Only the `recommended` resources are written: a request the API server defaulted
    from a limit, or a resource the policy does not control, stays as it is.
    """
    where = ("spec", container.field, container.index, "resources")
    return stanza_operations(where, container.spec.get("resources"), new, recommended)


def _said_of(container: SizedContainer) -> str:
    """Upstream's `container 0`; a sidecar by its place among the init containers."""
    return (
        f"initContainer {container.index}" if container.sidecar else f"container {container.index}"
    )


def _annotation_operations(pod: Json, annotations: Mapping[str, str]) -> list[dict[str, Any]]:
    metadata = _mapping_or_none(pod.get("metadata"), "metadata")
    operations: list[dict[str, Any]] = []
    if metadata is None:
        operations.append(add_operation(json_pointer("metadata"), {}))
    if _mapping_or_none((metadata or {}).get("annotations"), "metadata.annotations") is None:
        operations.append(add_operation(json_pointer("metadata", "annotations"), {}))
    for key, value in annotations.items():
        operations.append(add_operation(json_pointer("metadata", "annotations", key), value))
    return operations


def _said_of_limits(notes: Sequence[str]) -> list[str]:
    """Limit notes worth an annotation; upstream does not annotate a limit it leaves unset."""
    return [note for note in notes if not note.endswith("is nil or 0")]


def pod_patch(
    pod: Json,
    vpa: VerticalPodAutoscaler | None,
    limit_ranges: Sequence[LimitRange] = (),
    conflicts: Sequence[HpaConflict] = (),
    max_cpu_boost: Quantity | None = None,
) -> PodPatch:
    """The patch that sizes `pod` by `vpa` (its controlling VPA, or None).

    `limit_ranges` are the LimitRanges of the pod's namespace; `conflicts` the HPA
    metrics fighting the VPA (`tailor.hpa`): their resources keep the pod's own
    requests. A CPU startup boost applies on top, in every mode, up to `max_cpu_boost`
    (`admission.boost`).
    Raises PodUnreadable when the pod's JSON cannot be read.
    """
    containers = pod_containers(pod)
    if vpa is None:
        return PodPatch(reason="no VerticalPodAutoscaler controls it")
    try:
        stanza = stanza_of(pod)
    except ValueError as error:
        raise PodUnreadable(str(error)) from None
    current = [_current(container) for container in containers]
    ranges = _Ranges.of(limit_ranges)
    sizing = _sizing(vpa, current, ranges, conflicts, stanza)
    boosts = {c.name: b for c in current if (b := vpa.cpu_startup_boost(c.name)) is not None}
    boosts = {} if stanza is not None else boosts
    if isinstance(sizing, str) and not boosts:
        return PodPatch(reason=sizing)
    sized = sizing if not isinstance(sizing, str) else _Sized({}, {}, {})
    sized_resources = [sized.updates.get(c.name, c) for c in current]
    pod_updates: list[str] = []
    pod_operations: list[dict[str, Any]] = []
    if stanza is not None:
        sized_resources, pod_updates, pod_operations = pod_level_patch(
            pod, stanza, vpa, sized_resources, sized.targets, sized.written, ranges.pod
        )
    operations: list[dict[str, Any]] = []
    updates: list[str] = []
    raises = _boosts(sized_resources, vpa, ranges, max_cpu_boost)
    boosted: dict[str, BoostedCpu] = {}
    hold = 0.0
    for container, resources, update in zip(containers, current, sized_resources, strict=True):
        written = list(sized.written.get(resources.name, ()))
        notes = list(sized.notes.get(resources.name, ()))
        boost = boosts.get(resources.name)
        raised = raises.get(resources.name)
        if raised is not None and boost is not None:
            update, boosted[resources.name] = raised
            written = sorted({*written, RESOURCE_CPU})
            hold = max(hold, boost.hold().total_seconds())
            notes.append(f"cpu startup boost to {raised[1].request.canonical()}")
        if not written:
            continue
        changed, described = _container_operations(container, update, written)
        if changed:
            operations += changed
            updates.append(f"{_said_of(container)}: " + ", ".join([*notes, *described]))
    operations += pod_operations
    updates += pod_updates
    annotations = {OBSERVED_CONTAINERS_ANNOTATION: ", ".join(c.name for c in current)}
    if updates:
        annotations[UPDATES_ANNOTATION] = f"Pod resources updated by {vpa.name}: " + "; ".join(
            updates
        )
    if boosted:
        annotations[BOOST_ANNOTATION] = BoostRecord(hold, boosted).to_annotation()
    if conflicts:
        annotations[HPA_ANNOTATION] = conflict_message(conflicts)
    reason = annotations.get(UPDATES_ANNOTATION, f"VPA {vpa.name}: recommendation already in place")
    if isinstance(sizing, str) and not updates:
        reason = sizing
    if conflicts:
        reason += f"; left to the HPA: {annotations[HPA_ANNOTATION]}"
    return PodPatch(tuple(operations + _annotation_operations(pod, annotations)), reason)


def _boosts(
    sized: Sequence[ContainerResources],
    vpa: VerticalPodAutoscaler,
    ranges: _Ranges,
    max_cpu_boost: Quantity | None,
) -> dict[str, tuple[ContainerResources, BoostedCpu]]:
    """Each boosted container's resources (`admission.boost`); none at all when the boosted
    pod would pass the Pod LimitRange's cpu max (the API server would refuse it)."""
    raised = {}
    for container in sized:
        boost = vpa.cpu_startup_boost(container.name)
        policy = vpa.container_policy(container.name)
        found = (
            boost_container(container, boost, policy, ranges.container, max_cpu_boost)
            if boost is not None
            else None
        )
        if found is not None:
            raised[container.name] = found
    pod_max = ranges.pod.max.get(RESOURCE_CPU) if ranges.pod and ranges.pod.max else None
    if pod_max is not None and raised:
        final = [raised[c.name][0] if c.name in raised else c for c in sized]
        for field in ("requests", "limits"):
            amounts = (getattr(c, field).get(RESOURCE_CPU) for c in final)
            if sum(a.milli_value() for a in amounts if a is not None) > pod_max.milli_value():
                return {}
    return raised


@dataclass(frozen=True)
class _Ranges:
    """The namespace's LimitRanges merged, per type: read once per pod."""

    container: LimitRangeItem | None
    pod: LimitRangeItem | None

    @classmethod
    def of(cls, limit_ranges: Sequence[LimitRange]) -> _Ranges:
        return cls(
            merged_limit_range_item(limit_ranges, LimitType.CONTAINER),
            merged_limit_range_item(limit_ranges, LimitType.POD),
        )


@dataclass(frozen=True)
class _Sized:
    """Per container: the resources the VPA sets, which of them to write, and why."""

    updates: dict[str, ContainerResources]
    written: dict[str, list[str]]
    notes: dict[str, list[str]]
    targets: dict[str, ResourceList] = field(default_factory=dict)  # capped, HPA's left out


def _sizing(
    vpa: VerticalPodAutoscaler,
    current: Sequence[ContainerResources],
    ranges: _Ranges,
    conflicts: Sequence[HpaConflict],
    stanza: ContainerResources | None = None,
) -> _Sized | str:
    """What the VPA's recommendation sets, capped; or why it sets nothing. With the pod's
    pod-level `stanza`, no request the container shares with the pod is added
    (`admission.pod_level`)."""
    if vpa.effective_update_mode() is UpdateMode.OFF:
        return f"VPA {vpa.name} has updateMode Off"
    recommendation = vpa.recommendation()
    if recommendation is None or not recommendation.container_recommendations:
        return f"VPA {vpa.name} has no recommendation yet"
    container_range = ranges.container
    capped = cap_recommendations_for_pod(
        recommendation.container_recommendations,
        current,
        vpa.spec.resource_policy,
        container_range,
        ranges.pod,
    )
    targets = {r.container_name: r.target for r in capped.recommendations}
    sized = _Sized({}, {}, {})
    for resources in current:
        kept = contested(conflicts, resources.name)
        target = {k: v for k, v in (targets.get(resources.name) or {}).items() if k not in kept}
        sized.targets[resources.name] = ResourceList(target)
        target = own_only(target, resources, stanza) if stanza is not None else target
        if not target:
            continue
        update = new_container_resources(
            resources, ResourceList(target), vpa.container_policy(resources.name), container_range
        )
        sized.updates[resources.name] = update.resources
        sized.written[resources.name] = list(target)
        sized.notes[resources.name] = capped.notes.get(resources.name, []) + _said_of_limits(
            update.notes
        )
    _fit_pod_ratio(vpa, current, ranges, sized)
    return sized


def _fit_pod_ratio(
    vpa: VerticalPodAutoscaler,
    current: Sequence[ContainerResources],
    ranges: _Ranges,
    sized: _Sized,
) -> None:
    """Keep the pod's limit/request totals within the Pod LimitRange's ratio (in `sized`)."""
    movable = {
        (name, resource)
        for name, written in sized.written.items()
        if limits_follow(vpa.container_policy(name))
        for resource in written
    }
    final = [sized.updates.get(c.name, c) for c in current]
    fitted, lowered = fit_pod_limit_ratio(final, movable, ranges.pod)
    for container in fitted:
        if container.name in sized.updates:
            sized.updates[container.name] = container
    for name, resource in lowered:
        sized.notes[name].append(f"{resource} limit lowered to fit the Pod maxLimitRequestRatio")
