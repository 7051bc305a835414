"""The resize of a pod that sets pod-level resources (`spec.resources`, KEP-2837) (pure).

Containers with their own requests are sized as in any pod (`updater.plan`); the
pod-level stanza then takes the shared rule (`tailor.pod_level`): its requests the sum
of the containers' own requests and, for containers sharing the pod's, their targets;
its limits in proportion. Container limits stay within the pod-level limit. The API
server derives such a pod's QoS class from the stanza alone and refuses a resize that
changes it (422), so a plan that would is Skipped; it is sent as one `pods/resize`
patch (Kubernetes 1.36, `InPlacePodLevelResourcesVerticalScaling`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tailor.api.meta import ResourceList
from tailor.api.vpa import RecommendedContainerResources
from tailor.limits import ContainerResources
from tailor.pod_level import (
    POD_STANZA,
    Qos,
    limits_follow_for_pod,
    pod_level_resources,
    qos_class,
    size_pod_level,
    stanza_body,
    within_pod_limits,
)
from tailor.pods import INIT_FIELD, is_native_sidecar, sized_containers
from updater.due_targets import Target
from updater.plan import (
    ContainerResize,
    PodRules,
    ResizePlan,
    Skipped,
    container_changes,
    not_followed,
    plan_resize,
    restart_notes,
    wanted_amounts,
)
from updater.resources import Json, requests_of

LIMIT_NOT_SUMMED = "pod-level memory limit kept in proportion: per-container limits not summed"


def _capped_targets(
    pod: Json,
    targets: Mapping[str, Target],
    current: Mapping[str, ContainerResources],
    rules: PodRules,
) -> dict[str, ResourceList]:
    """Every container's target for cpu and memory, requested or not, capped as a write
    is (policy, LimitRanges): what it adds to the pod-level sum."""
    wanted = [
        RecommendedContainerResources(
            container_name=name,
            target=ResourceList.from_amounts(target.cpu_cores, target.memory_bytes),
        )
        for name, target in targets.items()
        if name in current
    ]
    capped = rules.cap(wanted, list(current.values()))
    return {r.container_name or "": r.target or ResourceList() for r in capped.recommendations}


def _plain_init(pod: Json) -> list[ContainerResources]:
    spec = pod.get("spec") or {}
    return [
        ContainerResources.of_container(c)
        for c in spec.get(INIT_FIELD) or []
        if not is_native_sidecar(c)
    ]


def _pod_level_restarts(
    pod: Json, before: ContainerResources, after: ContainerResources
) -> list[str]:
    """Containers without their own limit take the pod-level one: a change of it restarts
    those whose resizePolicy says RestartContainer for that resource."""
    said = []
    for sized in sized_containers(pod):
        own = ContainerResources.of_container(sized.spec)
        for policy in sized.spec.get("resizePolicy") or []:
            resource = policy.get("resourceName")
            if policy.get("restartPolicy") != "RestartContainer" or resource in own.limits:
                continue
            if before.limits.get(resource) != after.limits.get(resource):
                said.append(
                    f"{sized.name}: pod-level {resource} limit changes, resizePolicy "
                    "RestartContainer: the kubelet restarts it"
                )
    return said


def plan_pod_level(
    pod: Json, stanza: ContainerResources, targets: Mapping[str, Target], rules: PodRules
) -> ResizePlan | Skipped:
    """The resize that brings a pod with pod-level resources `stanza` to `targets`."""
    sized = sized_containers(pod)
    sidecars = {c.name for c in sized if c.sidecar}
    current = {c.name: ContainerResources.of_container(c.spec) for c in sized}
    own = [
        RecommendedContainerResources(
            container_name=c.name,
            target=wanted_amounts(targets[c.name], Qos.BURSTABLE, requests_of(c.spec)),
        )
        for c in sized
        if c.name in targets
    ]
    capped = rules.cap(own, list(current.values()))
    changes, _ = container_changes(current, capped.recommendations, rules, targets, sidecars)
    resized = [_resized(current[name], changes.get(name)) for name in current]
    policies = [
        rules.resource_policy.policy_for(name) if rules.resource_policy else None
        for name in current
    ]
    sizing = size_pod_level(
        stanza,
        resized,
        _capped_targets(pod, targets, current, rules),
        _plain_init(pod),
        limits_follow_for_pod(policies),
        rules.pod_limit_range,
    )
    fitted, lowered = within_pod_limits(resized, sizing.resources)
    changes = _changed(current, fitted, sidecars)
    after = {**pod, "spec": {**(pod.get("spec") or {}), "resources": stanza_body(sizing.resources)}}
    before_class, after_class = qos_class(pod), qos_class(after)
    if after_class is not before_class:
        return Skipped(f"the scheduled amounts would make a {before_class} pod {after_class}")
    new = sizing.resources
    moved = new.requests != stanza.requests or new.limits != stanza.limits
    pod_level = ContainerResize(POD_STANZA, dict(new.requests), dict(new.limits)) if moved else None
    notes = [note for found in capped.notes.values() for note in found]
    notes += list(sizing.notes) + lowered
    notes += list(restart_notes([c.spec for c in sized], changes, current))
    notes += _pod_level_restarts(pod, stanza, new) if moved else []
    if any(t.memory_limit_bytes is not None for t in targets.values()) and moved:
        notes.append(LIMIT_NOT_SUMMED)
    if not changes and pod_level is None:
        notes = list(sizing.notes)  # what kept it as it is, if anything
    return ResizePlan(tuple(changes.values()), tuple(notes) + not_followed(pod, targets), pod_level)


def _resized(current: ContainerResources, change: ContainerResize | None) -> ContainerResources:
    if change is None:
        return current
    return ContainerResources(
        current.name, ResourceList(change.requests), ResourceList(change.limits)
    )


def _changed(
    current: Mapping[str, ContainerResources],
    fitted: Sequence[ContainerResources],
    sidecars: set[str],
) -> dict[str, ContainerResize]:
    return {
        new.name: ContainerResize(
            new.name, dict(new.requests), dict(new.limits), new.name in sidecars
        )
        for new in fitted
        if new.requests != current[new.name].requests or new.limits != current[new.name].limits
    }


def plan_pod_resize(
    pod: Json, targets: Mapping[str, Target], rules: PodRules | None = None
) -> ResizePlan | Skipped:
    """The pod's resize: at pod level when it sets `spec.resources`, else per container
    (`updater.plan`). Raises QuantityError on unreadable amounts."""
    stanza = pod_level_resources(pod)
    if stanza is None:
        return plan_resize(pod, targets, rules)
    return plan_pod_level(pod, stanza, targets, rules or PodRules())
