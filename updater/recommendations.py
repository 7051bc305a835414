"""Following a VPA's own recommendation in place, as upstream's updater decides it (pure).

`tailor follow --recommendations` applies each pod's VPA status (whichever recommender
wrote it, upstream's included) instead of a schedule. A pod is updated only when
upstream's updater would update it: a request outside [lowerBound, upperBound]; a
container OOM-killed after running under 10 minutes (the VPA's
`updatePolicy.evictAfterOOMSeconds`, upstream's AEP-8026, when it sets one); or a pod up
for over 12 hours whose requests are, summed over cpu and memory, at least 10 % off the
target. Like upstream's, it judges the processed recommendation: capped by the VPA's
resource policy and the namespace's LimitRanges (`tailor.capping`), so a pod held at a
cap is not "outside its bounds" on every pass, and a container in mode Off is no reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from tailor.api.vpa import RecommendedContainerResources, VerticalPodAutoscaler
from tailor.limits import ContainerResources
from tailor.pods import container_statuses, sized_containers
from tailor.schedule_file import aware_time
from updater.due_targets import Target
from updater.plan import PodRules
from updater.resources import (
    RESOURCES,
    Json,
    amount,
    relative_change,
    requests_of,
    resource_list,
)

QUICK_OOM = timedelta(minutes=10)
LONG_LIVED = timedelta(hours=12)
MIN_CHANGE = 0.1


@dataclass(frozen=True)
class UpdateRules:
    """Upstream's updater thresholds, by its flags: --evict-after-oom-threshold (a VPA's
    updatePolicy.evictAfterOOMSeconds wins), --in-recommendation-bounds-eviction-lifetime-
    threshold and --pod-update-threshold."""

    quick_oom: timedelta = QUICK_OOM
    long_lived: timedelta = LONG_LIVED
    min_change: float = MIN_CHANGE


def _target_amount(target: Target | None, resource: str) -> float | None:
    if target is None:
        return None
    return target.cpu_cores if resource == "cpu" else target.memory_bytes


Contested = Callable[[str], frozenset[str]]  # a container's resources an HPA scales on


def _none(container: str) -> frozenset[str]:
    return frozenset()


Processed = Mapping[str, RecommendedContainerResources]  # by container, after the caps


def processed_recommendation(
    vpa: VerticalPodAutoscaler, pod: Json, rules: PodRules | None = None
) -> Processed:
    """The VPA's recommendation for this pod as it would be written: capped by `rules`
    (policy, LimitRanges), containers in mode Off and ones the pod lacks left out."""
    status = vpa.status
    recommendation = status.recommendation if status is not None else None
    items = (recommendation.container_recommendations if recommendation else None) or []
    if not items:
        return {}
    rules = rules or PodRules(resource_policy=vpa.spec.resource_policy)
    containers = [ContainerResources.of_container(c.spec) for c in sized_containers(pod)]
    capped = rules.cap(items, containers)
    return {r.container_name: r for r in capped.recommendations if r.container_name}


def recommended_targets(processed: Processed) -> dict[str, Target]:
    """Each container's recommended target, as the updater's targets (limits follow)."""
    return {
        name: Target(item.target.cpu_cores(), item.target.memory_bytes(), None)
        for name, item in processed.items()
        if item.target
    }


def _bound(item: RecommendedContainerResources, name: str, resource: str) -> int | None:
    bounds = getattr(item, name)
    return amount(resource, bounds[resource]) if bounds and resource in bounds else None


def _pod_level_sum(pod: Json, processed: Processed, field: str, resource: str) -> int | None:
    """A bound (or the target) summed over the pod's sized containers: the pod-level figure
    (`tailor.pod_level`); None when a container has none for `resource`."""
    total = 0
    for sized in sized_containers(pod):
        item = processed.get(sized.name)
        value = _bound(item, field, resource) if item is not None else None
        if value is None:
            return None
        total += value
    return total


def _pod_level_outside(pod: Json, processed: Processed, contested: Contested) -> str | None:
    """A pod-level request outside the summed bounds (a pod that sets `spec.resources`)."""
    stanza = ((pod.get("spec") or {}).get("resources") or {}).get("requests")
    taken = {r for c in sized_containers(pod) for r in contested(c.name)}
    for resource, value in resource_list(stanza).items():
        if resource in taken:
            continue
        lower = _pod_level_sum(pod, processed, "lower_bound", resource)
        upper = _pod_level_sum(pod, processed, "upper_bound", resource)
        if lower is not None and value < lower:
            return f"pod-level {resource} request below the sum of the lowerBounds"
        if upper is not None and value > upper:
            return f"pod-level {resource} request above the sum of the upperBounds"
    return None


def _outside_bounds(pod: Json, processed: Processed, contested: Contested) -> str | None:
    pod_level = _pod_level_outside(pod, processed, contested)
    if pod_level is not None:
        return pod_level
    for container in (c.spec for c in sized_containers(pod)):
        name = str(container.get("name"))
        item = processed.get(name)
        if item is None:
            continue
        for resource, value in requests_of(container).items():
            if resource in contested(name):
                continue
            lower, upper = (
                _bound(item, "lower_bound", resource),
                _bound(item, "upper_bound", resource),
            )
            if lower is not None and value < lower:
                return f"{name} {resource} request below the recommendation's lowerBound"
            if upper is not None and value > upper:
                return f"{name} {resource} request above the recommendation's upperBound"
    return None


def quick_oom_threshold(vpa: VerticalPodAutoscaler, default: timedelta = QUICK_OOM) -> timedelta:
    """How short a run ended by an OOM kill makes the pod worth updating at once: the VPA's
    own, else `default` (upstream's `--evict-after-oom-threshold`, 10 min)."""
    policy = vpa.spec.update_policy
    seconds = policy.evict_after_oom_seconds if policy is not None else None
    return default if seconds is None else timedelta(seconds=seconds)


def _quick_oom(
    pod: Json, processed: Processed, contested: Contested, threshold: timedelta
) -> str | None:
    for status in container_statuses(pod).values():
        name = str(status.get("name"))
        if name not in processed or "memory" in contested(name):
            continue  # mode Off, no recommendation, or its memory is the HPA's
        ended = ((status.get("lastState") or {}).get("terminated")) or {}
        if ended.get("reason") != "OOMKilled":
            continue
        try:
            ran = aware_time(str(ended["finishedAt"])) - aware_time(str(ended["startedAt"]))
        except (KeyError, ValueError):
            continue
        if ran < threshold:
            return f"{status.get('name')} OOM-killed after running {ran}"
    return None


def _relative_change(pod: Json, targets: Mapping[str, Target]) -> float:
    """Upstream's measure between the requests and the targets of the containers that have
    one, for the resources they request."""
    requested, wanted = dict.fromkeys(RESOURCES, 0.0), dict.fromkeys(RESOURCES, 0.0)
    for container in (c.spec for c in sized_containers(pod)):
        target = targets.get(str(container.get("name")))
        if target is None:
            continue
        requests = requests_of(container)
        for resource, value in (("cpu", target.cpu_cores), ("memory", target.memory_bytes)):
            if value is not None and resource in requests:
                requested[resource] += requests[resource]
                wanted[resource] += value * 1000 if resource == "cpu" else value
    stanza = ((pod.get("spec") or {}).get("resources") or {}).get("requests")
    for resource, value in resource_list(stanza).items():  # pod-level: the pod's requests
        amounts = [_target_amount(targets.get(c.name), resource) for c in sized_containers(pod)]
        known = [a for a in amounts if a is not None]
        if len(known) == len(amounts):
            requested[resource] = value
            wanted[resource] = sum(known) * (1000 if resource == "cpu" else 1)
    return relative_change(requested, wanted)


def update_reason(
    pod: Json,
    vpa: VerticalPodAutoscaler,
    now: datetime,
    targets: Mapping[str, Target] | None = None,
    contested: Contested = _none,
    rules: UpdateRules = UpdateRules(),
    pod_rules: PodRules | None = None,
    processed: Processed | None = None,
) -> str | None:
    """Why upstream's updater would update the pod now; None leaves it as it is.

    The recommendation is judged capped by `pod_rules` (default: the VPA's own policy);
    `targets` are its targets, when the caller has them already (less what an HPA scales
    on); `contested` resources (an HPA's) are no reason either. A quick OOM is a reason
    only if the requests would change: an identical replacement would be killed the same
    way, and evicted again. `processed`: the capped recommendation, when the caller
    has it already (it is not capped twice)."""
    if processed is None:
        processed = processed_recommendation(vpa, pod, pod_rules)
    targets = recommended_targets(processed) if targets is None else targets
    change = _relative_change(pod, targets)
    quick = quick_oom_threshold(vpa, rules.quick_oom)
    reason = _outside_bounds(pod, processed, contested)
    if reason is None and change > 0:
        reason = _quick_oom(pod, processed, contested, quick)
    if reason is not None:
        return reason
    started = (pod.get("status") or {}).get("startTime")
    try:
        age = now - aware_time(str(started)) if started else timedelta(0)
    except ValueError:
        age = timedelta(0)
    if age > rules.long_lived and change >= rules.min_change:
        return f"up {age} and {change:.0%} off its recommendation"
    return None
