"""Capping recommendations to policies and LimitRanges, as the upstream VPA does (pure).

Two callers, two stages:

* the recommender writes status with `apply_resource_policy`: containers in mode
  Off get no recommendation, uncontrolled resources are dropped, target/lower/upper
  are clamped to the policy's minAllowed/maxAllowed and the raw target is kept as
  `uncappedTarget`;
* the admission webhook and the updater, holding a concrete pod, call
  `cap_recommendations_for_pod` (pod LimitRange, then per container: container
  LimitRange, the policy again, and with RequestsOnly the container's current
  limit) and then `tailor.limits.new_container_resources` for the requests and
  limits to set.

Where we differ from upstream it is said at the function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tailor.api.limitrange import LimitRangeItem
from tailor.api.meta import ResourceList
from tailor.api.vpa import (
    DEFAULT_CONTROLLED_RESOURCES,
    ContainerResourcePolicy,
    ControlledValues,
    PodResourcePolicy,
    RecommendedContainerResources,
)
from tailor.limits import (
    LIMIT_SCALED_RESOURCES,
    ContainerResources,
    ContainerUpdate,
    Rounding,
    boundary_request,
    new_container_resources,
    nonzero,
    proportional_limit,
    scale_proportionally,
)
from tailor.quantity import Quantity

__all__ = [
    "BOUND_FIELDS",
    "ContainerResources",
    "ContainerUpdate",
    "PodCapping",
    "PolicyCapping",
    "apply_container_policy",
    "apply_resource_policy",
    "cap_recommendations_for_pod",
    "cap_to_container_limit_range",
    "cap_to_pod_limit_range",
    "new_container_resources",
    "proportional_limit",
]

BOUND_FIELDS = ("target", "lower_bound", "upper_bound")


@dataclass(frozen=True)
class PolicyCapping:
    """A recommendation clamped to its policy, with the raw target kept beside it."""

    capped: RecommendedContainerResources
    uncapped: ResourceList
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PodCapping:
    """Per-container recommendations fitted to one pod, and why they changed."""

    recommendations: list[RecommendedContainerResources]
    notes: dict[str, list[str]]


# --- policy (minAllowed / maxAllowed / controlledResources / mode) -----------------------


def _clamp(
    values: ResourceList | None,
    lower: Mapping[str, Quantity] | None,
    upper: Mapping[str, Quantity] | None,
    reasons: tuple[str, str],
) -> tuple[ResourceList | None, list[str]]:
    """Raise to `lower` then cut to `upper` (zero bounds ignored): the upper bound wins."""
    if values is None:
        return None, []
    result, notes = ResourceList(values), []
    for name, amount in values.items():
        floor = nonzero((lower or {}).get(name))
        if floor is not None and amount < floor:
            amount = floor
            notes.append(f"{name} {reasons[0]}")
        ceiling = nonzero((upper or {}).get(name))
        if ceiling is not None and amount > ceiling:
            amount = ceiling
            notes.append(f"{name} {reasons[1]}")
        result[name] = amount
    return result, notes


def _only(values: ResourceList | None, names: Iterable[str]) -> ResourceList | None:
    if values is None:
        return None
    wanted = set(names)
    return ResourceList({name: amount for name, amount in values.items() if name in wanted})


def _with_fields(
    recommendation: RecommendedContainerResources, values: dict[str, ResourceList | None]
) -> RecommendedContainerResources:
    update: dict[str, ResourceList | None] = dict(values)
    if update.get("target") is None and "target" in update:
        update["target"] = ResourceList()
    return recommendation.model_copy(update=update, deep=True)


def apply_container_policy(
    recommendation: RecommendedContainerResources,
    policy: ContainerResourcePolicy | None,
    global_max_allowed: Mapping[str, Quantity] | None = None,
) -> PolicyCapping | None:
    """Clamp one container's recommendation to its policy; None when its mode is Off.

    Resources outside controlledResources are dropped first; `uncapped` (also
    written as uncappedTarget) is the target after that drop, before clamping.
    `global_max_allowed` fills maxAllowed for resources the policy leaves open
    (upstream's --container-recommendation-max-allowed-* flags).
    """
    if policy is not None and policy.is_off:
        return None
    controlled = policy.effective_controlled_resources() if policy else DEFAULT_CONTROLLED_RESOURCES
    lower = policy.min_allowed if policy else None
    upper = ResourceList(global_max_allowed or {})
    upper.update((policy.max_allowed or {}) if policy else {})
    reasons = ("capped to minAllowed", "capped to maxAllowed")
    fields: dict[str, ResourceList | None] = {}
    notes: list[str] = []
    for name in BOUND_FIELDS:
        values = _only(getattr(recommendation, name), controlled)
        fields[name], field_notes = _clamp(values, lower, upper, reasons)
        if name == "target":
            notes = field_notes
    uncapped = _only(recommendation.target, controlled) or ResourceList()
    fields["uncapped_target"] = uncapped
    capped = _with_fields(recommendation, fields)
    return PolicyCapping(capped=capped, uncapped=uncapped, notes=tuple(notes))


def apply_resource_policy(
    recommendations: Iterable[RecommendedContainerResources],
    resource_policy: PodResourcePolicy | None,
    global_max_allowed: Mapping[str, Quantity] | None = None,
) -> list[RecommendedContainerResources]:
    """The recommender's last step: policy applied per container, Off containers left out,
    sorted by container name as upstream writes them."""
    result = []
    for recommendation in recommendations:
        name = recommendation.container_name or ""
        policy = resource_policy.policy_for(name) if resource_policy else None
        capping = apply_container_policy(recommendation, policy, global_max_allowed)
        if capping is not None:
            result.append(capping.capped)
    return sorted(result, key=lambda r: r.container_name or "")


# --- LimitRange ---------------------------------------------------------------------------


def cap_to_container_limit_range(
    values: ResourceList, container: ContainerResources, item: LimitRangeItem | None
) -> tuple[ResourceList, list[str]]:
    """Fit cpu/memory into a Container LimitRange item, respecting the limit/request ratio.

    The request is capped so that its proportional limit stays <= max, and raised
    so that both it and its limit reach min (the API rejects pods otherwise).
    """
    if item is None:
        return ResourceList(values), []
    lower, upper = ResourceList(), ResourceList()
    for resource in LIMIT_SCALED_RESOURCES:
        default_limit = _quantity(item.default, resource)
        top = boundary_request(resource, container, _quantity(item.max, resource), default_limit)
        if top is not None:
            upper[resource] = top
        minimum = nonzero(_quantity(item.min, resource))
        bottom = boundary_request(resource, container, minimum, default_limit)
        candidates = [amount for amount in (bottom, minimum) if amount is not None]
        if candidates:
            lower[resource] = max(candidates)
    reasons = (
        "capped to fit Min in container LimitRange",
        "capped to fit Max in container LimitRange",
    )
    capped, notes = _clamp(values, lower, upper, reasons)
    return capped or ResourceList(), notes


def _quantity(values: Mapping[str, Quantity] | None, resource: str) -> Quantity | None:
    return values.get(resource) if values is not None else None


def cap_to_pod_limit_range(
    recommendations: Sequence[RecommendedContainerResources],
    containers: Sequence[ContainerResources],
    item: LimitRangeItem | None,
) -> list[RecommendedContainerResources]:
    """Scale a pod's recommendations together so the pod's totals fit a Pod LimitRange item.

    For each of target, lowerBound and upperBound and for cpu and memory: if the
    sum of requests is under min, every recommended value is scaled up by the
    same factor (rounded up); otherwise, if the sum of the proportional limits is
    under min or over max, they are scaled by the factor that brings that sum to
    the bound (rounded up for min, down for max); a sum of requests over max (the
    LimitRanger refuses it too, limits or not) scales the values down to it. Unlike
    upstream, containers
    without a recommendation for a value count with their current request and
    limit but are never changed themselves, and CPU is rounded to 1m, not to whole
    cores.
    """
    if item is None:
        return list(recommendations)
    updated: dict[str, dict[str, ResourceList | None]] = {
        rec.container_name or "": {name: getattr(rec, name) for name in BOUND_FIELDS}
        for rec in recommendations
    }
    _fit_pod_totals(updated, containers, item)
    return [_with_fields(rec, updated[rec.container_name or ""]) for rec in recommendations]


def _fit_pod_totals(
    updated: dict[str, dict[str, ResourceList | None]],
    containers: Sequence[ContainerResources],
    item: LimitRangeItem,
) -> None:
    """`cap_to_pod_limit_range` on the bounds per container name, in place."""
    for name in BOUND_FIELDS:
        for resource in LIMIT_SCALED_RESOURCES:
            _fit_pod_total(name, resource, containers, updated, item)


def _fit_pod_total(
    name: str,
    resource: str,
    containers: Sequence[ContainerResources],
    updated: dict[str, dict[str, ResourceList | None]],
    item: LimitRangeItem,
) -> None:
    """Scale one bound of one resource across the pod's containers (in `updated`)."""
    minimum = nonzero(_quantity(item.min, resource))
    maximum = nonzero(_quantity(item.max, resource))
    default_limit = _quantity(item.default, resource)
    zero = Quantity(0)
    movable: list[tuple[str, Quantity]] = []
    fixed_requests = fixed_limits = movable_requests = movable_limits = zero
    for container in containers:
        request = container.requests.get(resource)
        fields = updated.get(container.name)
        value = _quantity(fields[name], resource) if fields is not None else None
        if value is None:
            fixed_requests += request or zero
            fixed_limits += (
                nonzero(container.limits.get(resource)) or nonzero(default_limit) or zero
            )
            continue
        limit, _ = proportional_limit(
            resource, container.limits.get(resource), request, value, default_limit
        )
        movable.append((container.name, value))
        movable_requests += value
        movable_limits += limit or zero
    if movable_requests.is_zero():
        return
    rounding: Rounding
    if minimum is not None and movable_requests + fixed_requests < minimum:
        share, base, rounding = minimum - fixed_requests, movable_requests, "up"
    elif (
        minimum is not None
        and not movable_limits.is_zero()
        and movable_limits + fixed_limits < minimum
    ):
        share, base, rounding = minimum - fixed_limits, movable_limits, "up"
    elif (
        maximum is not None
        and not movable_limits.is_zero()
        and movable_limits + fixed_limits > maximum
    ):
        share, base, rounding = maximum - fixed_limits, movable_limits, "down"
    elif maximum is not None and movable_requests + fixed_requests > maximum:
        share, base, rounding = maximum - fixed_requests, movable_requests, "down"
    else:
        return
    if share.nanos <= 0:
        return  # the containers we may not touch break the bound on their own
    for container_name, value in movable:
        values = ResourceList(updated[container_name][name] or {})
        values[resource] = scale_proportionally(value, share, base, resource, rounding)[0]
        updated[container_name][name] = values


# --- the whole pipeline for one pod --------------------------------------------------------


def cap_recommendations_for_pod(
    recommendations: Sequence[RecommendedContainerResources],
    containers: Sequence[ContainerResources],
    resource_policy: PodResourcePolicy | None,
    container_limit_range: LimitRangeItem | None = None,
    pod_limit_range: LimitRangeItem | None = None,
) -> PodCapping:
    """Fit a VPA's recommendations to one pod, in upstream's order.

    Containers in mode Off and recommendations for containers not in the pod are
    dropped; each bound is restricted to the controlled resources. Then: Pod
    LimitRange, Container LimitRange, the policy's min/max (the policy wins over
    the LimitRange), and with RequestsOnly the container's current limit.
    Notes (upstream's annotation wording) come from the target only.
    """
    pod_names = {container.name for container in containers}
    kept: dict[str, RecommendedContainerResources] = {}
    bounds: dict[str, dict[str, ResourceList | None]] = {}
    for recommendation in recommendations:
        name = recommendation.container_name or ""
        policy = resource_policy.policy_for(name) if resource_policy else None
        if name not in pod_names or (policy is not None and policy.is_off):
            continue
        controlled = (
            policy.effective_controlled_resources() if policy else DEFAULT_CONTROLLED_RESOURCES
        )
        kept[name] = recommendation  # a container's last recommendation counts
        bounds[name] = {f: _only(getattr(recommendation, f), controlled) for f in BOUND_FIELDS}
    if pod_limit_range is not None:
        _fit_pod_totals(bounds, containers, pod_limit_range)
    result: list[RecommendedContainerResources] = []
    notes: dict[str, list[str]] = {}
    for container in containers:
        pod_fitted = bounds.get(container.name)
        if pod_fitted is None:
            continue
        policy = resource_policy.policy_for(container.name) if resource_policy else None
        fields: dict[str, ResourceList | None] = {}
        container_notes: list[str] = []
        for name in BOUND_FIELDS:
            values, field_notes = _cap_one(
                pod_fitted[name], container, policy, container_limit_range
            )
            fields[name] = values
            if name == "target":
                container_notes = field_notes
        result.append(_with_fields(kept[container.name], fields))
        if container_notes:
            notes[container.name] = container_notes
    return PodCapping(recommendations=result, notes=notes)


def _cap_one(
    values: ResourceList | None,
    container: ContainerResources,
    policy: ContainerResourcePolicy | None,
    limit_range: LimitRangeItem | None,
) -> tuple[ResourceList | None, list[str]]:
    if values is None:
        return None, []
    notes: list[str] = []
    if limit_range is not None:
        values, notes = cap_to_container_limit_range(values, container, limit_range)
    if policy is not None:
        reasons = ("capped to minAllowed", "capped to maxAllowed")
        policy_capped, policy_notes = _clamp(
            values, policy.min_allowed, policy.max_allowed, reasons
        )
        values, notes = policy_capped or ResourceList(), notes + policy_notes
    if (
        policy is not None
        and policy.effective_controlled_values() is ControlledValues.REQUESTS_ONLY
    ):
        limited, limit_notes = _clamp(
            values, None, container.limits, ("", "capped to container limit")
        )
        values, notes = limited or ResourceList(), notes + limit_notes
    return values, notes
