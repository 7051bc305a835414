"""In which order one pass treats its pods (pure): upstream's updater priority.

Pods with a container whose request must grow come first (even if the pod's total
shrinks), then the largest relative change: when a node has room for only some of
the resizes a pass wants, the pods short of resources get it before pods that would
only be trimmed or nudged.
"""

from __future__ import annotations

from tailor.pods import sized_containers
from updater.plan import ResizePlan
from updater.resources import RESOURCES, Json, relative_change, requests_of, resource_list


def _pod_requests(containers: list[Json]) -> dict[str, int]:
    totals = dict.fromkeys(RESOURCES, 0)
    for container in containers:
        for resource, value in requests_of(container).items():
            totals[resource] += value
    return totals


Rank = tuple[int, float]


def priority(pod: Json, plan: ResizePlan) -> Rank:
    """A sort key, smallest first: (0 for a scale-up else 1, minus the relative change).

    The relative change is upstream's (`updater.resources.relative_change`).
    """
    containers = [c.spec for c in sized_containers(pod)]
    now = _pod_requests(containers)
    changed = {c.name: c for c in plan.containers}
    after = dict(now)
    grows = False  # any container short of a resource, as upstream judges it per container
    for container in containers:
        resize = changed.get(str(container.get("name")))
        if resize is None:
            continue
        before = requests_of(container)
        wanted = resize.request_amounts()
        for resource in resize.requests:  # the resources this resize sets
            if resource in before:
                after[resource] += wanted.get(resource) - before[resource]
                grows = grows or wanted.get(resource) > before[resource]
    if plan.pod_level is not None:  # the pod's requests are its pod-level ones
        stanza = ((pod.get("spec") or {}).get("resources") or {}).get("requests")
        before_pod = resource_list(stanza)
        wanted = plan.pod_level.request_amounts()
        for resource, value in before_pod.items():
            now[resource], after[resource] = value, wanted.get(resource)
            grows = grows or wanted.get(resource) > value
    return (0 if grows else 1, -relative_change(now, after))
