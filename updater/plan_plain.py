"""The resize plan of a plain pod, without the capping pipeline's objects (pure).

Most pods the updater plans have no VPA resource policy, no LimitRange, no init
containers and no pod-level resources. For them every step of `tailor.capping` and the
Pod ratio fit leaves the amounts as they are, so `updater.plan.plan_resize` spends most
of a plan building pydantic recommendations and resource lists that change nothing.
This path makes the same plan from the same rules (`wanted_amounts`,
`tailor.limits.new_container_resources`, `with_planned_memory_limit`) without them,
and hands back None, for the full pipeline, wherever the pod is not plain or the plan
would change its QoS class. A test holds it equal to the full pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping

from tailor.limits import ContainerResources, new_container_resources
from tailor.pod_level import Qos, qos_of_stanzas
from tailor.pods import APP_FIELD, INIT_FIELD
from updater.due_targets import Target
from updater.plan import (
    ContainerResize,
    PodRules,
    ResizePlan,
    Skipped,
    not_followed,
    resized_stanzas,
    restart_notes,
    wanted_amounts,
    with_planned_memory_limit,
)
from updater.resources import Json, requests_of


def _plain_containers(pod: Json, rules: PodRules | None) -> list[Json] | None:
    """The pod's containers when it is plain (see above), else None."""
    if rules is not None and (
        rules.resource_policy is not None
        or rules.container_limit_range is not None
        or rules.pod_limit_range is not None
    ):
        return None
    spec = pod.get("spec")
    if type(spec) is not dict or spec.get(INIT_FIELD) or "resources" in spec:
        return None
    containers = spec.get(APP_FIELD) or []
    if type(containers) is not list or any(type(c) is not dict for c in containers):
        return None
    if len({str(c.get("name")) for c in containers}) != len(containers):
        return None
    return containers


def plain_plan(
    pod: Json, targets: Mapping[str, Target], rules: PodRules | None = None
) -> ResizePlan | Skipped | None:
    """`plan_resize(pod, targets, rules)` for a plain pod; None to make it the full way.
    Raises QuantityError on unreadable amounts, as the full way does, in the same order."""
    containers = _plain_containers(pod, rules)
    if containers is None:
        return None
    stanzas = [ContainerResources.of_container(c) for c in containers]
    qos = qos_of_stanzas(stanzas)
    if qos is Qos.BEST_EFFORT:
        return Skipped("BestEffort pod: no requests to resize")
    wanted = {}
    for container, stanza in zip(containers, stanzas, strict=True):
        if stanza.name in targets:
            amounts = wanted_amounts(targets[stanza.name], qos, requests_of(container))
            if not amounts:
                return None  # the pipeline's shape for nothing wanted: left to it
            wanted[stanza.name] = amounts
    changes: dict[str, ContainerResize] = {}
    for stanza in stanzas:
        target = wanted.get(stanza.name)
        if target is None:
            continue
        new = new_container_resources(stanza, target).resources
        if "memory" in target:
            new = with_planned_memory_limit(new, targets[stanza.name], None)
        if new.requests != stanza.requests or new.limits != stanza.limits:
            changes[new.name] = ContainerResize(new.name, dict(new.requests), dict(new.limits))
    if qos_of_stanzas(resized_stanzas(stanzas, changes)) is not qos:
        return None  # the full way keeps the memory limit's ratio or skips the pod
    current = {stanza.name: stanza for stanza in stanzas}
    notes = restart_notes(containers, changes, current) if changes else ()
    return ResizePlan(tuple(changes.values()), notes + not_followed(pod, targets))
