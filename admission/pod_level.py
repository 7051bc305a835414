"""The webhook's sizing of a pod that sets pod-level resources (`spec.resources`) (pure).

Containers with their own requests are sized as in any pod; containers without keep
none and share the pod's, whose requests and limits take the rule the updater shares
(`tailor.pod_level`): the sum of the containers' own requests and, for the others,
their capped targets; limits in proportion; container limits within the pod's. A CPU
startup boost is not applied to such a pod (its containers' CPU comes from the pod's),
and the annotation says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from admission.json_patch import stanza_operations
from tailor.api.limitrange import LimitRangeItem
from tailor.api.meta import ResourceList
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.limits import LIMIT_SCALED_RESOURCES, ContainerResources
from tailor.pod_level import (
    limits_follow_for_pod,
    pod_level_resources,
    size_pod_level,
    within_pod_limits,
)
from tailor.pods import plain_init_container_names
from tailor.quantity import Quantity, QuantityError

Json = Mapping[str, Any]

NO_BOOST = "cpu startup boost not applied: the pod sets pod-level resources"


def stanza_of(pod: Json) -> ContainerResources | None:
    """The pod's pod-level stanza, None without one; ValueError on a bad amount."""
    try:
        return pod_level_resources(pod)
    except QuantityError as error:
        raise ValueError(f"spec.resources: {error}") from None


def own_only(
    target: Mapping[str, Quantity], current: ContainerResources, stanza: ContainerResources
) -> ResourceList:
    """The target less the resources the pod requests at pod level and the container does
    not request itself: it shares the pod's, no request is added. A resource the pod does
    not request at pod level is sized as in any pod."""
    return ResourceList(
        {r: q for r, q in target.items() if r in current.requests or r not in stanza.requests}
    )


@dataclass
class PodLevelSized:
    """The containers' resources with limits within the pod's, the new stanza, notes."""

    containers: list[ContainerResources]
    stanza: ContainerResources
    lowered: dict[str, list[str]] = field(default_factory=dict)  # container -> resources
    notes: list[str] = field(default_factory=list)


def size_at_admission(
    pod: Json,
    stanza: ContainerResources,
    vpa: VerticalPodAutoscaler,
    sized: Sequence[ContainerResources],
    targets: Mapping[str, Mapping[str, Quantity]],
    pod_range: LimitRangeItem | None = None,
) -> PodLevelSized:
    """The stanza for the containers' new resources `sized` and capped `targets`."""
    spec = pod.get("spec") or {}
    plain = set(plain_init_container_names(pod))
    plain_init = [
        ContainerResources.of_container(c)
        for c in spec.get("initContainers") or []
        if c.get("name") in plain
    ]
    follow = limits_follow_for_pod([vpa.container_policy(c.name) for c in sized])
    sizing = size_pod_level(stanza, sized, targets, plain_init, follow, pod_range)
    fitted, notes = within_pod_limits(sized, sizing.resources)
    lowered = {
        new.name: [r for r in LIMIT_SCALED_RESOURCES if new.limits.get(r) != old.limits.get(r)]
        for new, old in zip(fitted, sized, strict=True)
        if new.limits != old.limits
    }
    return PodLevelSized(fitted, sizing.resources, lowered, [*sizing.notes, *notes])


def pod_level_patch(
    pod: Json,
    stanza: ContainerResources,
    vpa: VerticalPodAutoscaler,
    sized_resources: list[ContainerResources],
    targets: Mapping[str, Mapping[str, Quantity]],
    written: dict[str, list[str]],
    pod_range: LimitRangeItem | None = None,
) -> tuple[list[ContainerResources], list[str], list[dict[str, Any]]]:
    """The containers' resources within the pod-level limit (`written` grows by the
    limits lowered), the annotation's part for the stanza and its patch operations."""
    level = size_at_admission(pod, stanza, vpa, sized_resources, targets, pod_range)
    for name, resources in level.lowered.items():
        written[name] = sorted({*written.get(name, []), *resources})
    where = ("spec", "resources")
    changed = [r for r in LIMIT_SCALED_RESOURCES if r in level.stanza.requests]
    operations, described = stanza_operations(
        where, (pod.get("spec") or {}).get("resources"), level.stanza, changed
    )
    boosted = any(vpa.cpu_startup_boost(c.name) is not None for c in sized_resources)
    notes = level.notes + ([NO_BOOST] if boosted else [])
    said = ", ".join([*notes, *described])
    return level.containers, [f"pod: {said}"] if said else [], operations
