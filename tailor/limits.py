"""Requests and limits of one container: the limit/request proportion, as upstream keeps it.

Like upstream, CPU is scaled in whole millicores and every other resource in whole
units (the values rounded up to those steps first), and a scaled limit is rounded
down and capped at int64 steps. All arithmetic is exact.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from tailor.api.limitrange import LimitRangeItem
from tailor.api.meta import RESOURCE_CPU, RESOURCE_MEMORY, ResourceList, granule
from tailor.api.vpa import ContainerResourcePolicy, ControlledValues
from tailor.quantity import INT64_MAX, Quantity

LIMIT_SCALED_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY)
Rounding = Literal["down", "up"]


def defaulted_requests(container: Mapping[str, Any]) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """A pod spec container's requests with its limits standing in for missing ones (the
    API server's defaulting), and its limits: the JSON amounts, not yet parsed."""
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    return {**limits, **requests}, limits


@dataclass(frozen=True)
class ContainerResources:
    """A container's requests and limits as they stand in its pod spec."""

    name: str
    requests: ResourceList = field(default_factory=ResourceList)
    limits: ResourceList = field(default_factory=ResourceList)

    @classmethod
    def of_container(cls, container: Mapping[str, Any]) -> ContainerResources:
        """cpu / memory of a pod spec's container (JSON); a limit stands in for a missing
        request, as the API server's defaulting does. Raises QuantityError on bad amounts."""
        defaulted, limits = defaulted_requests(container)
        return cls(
            name=str(container.get("name")),
            requests=ResourceList(
                {r: defaulted[r] for r in LIMIT_SCALED_RESOURCES if r in defaulted}
            ),
            limits=ResourceList({r: limits[r] for r in LIMIT_SCALED_RESOURCES if r in limits}),
        )


@dataclass(frozen=True)
class ContainerUpdate:
    """The requests and limits to write into a container, and why they differ."""

    resources: ContainerResources
    notes: tuple[str, ...] = ()


def steps_of(amount: Quantity, resource: str) -> int:
    """Amount in scaling steps, rounded up (MilliValue / Value)."""
    return -(-amount.nanos // granule(resource))


def multiply(
    amount: Quantity, factor: Fraction, resource: str, rounding: Rounding = "down"
) -> tuple[Quantity, bool]:
    """amount * factor in whole steps (format kept); True when capped at int64 steps."""
    exact = steps_of(amount, resource) * factor
    steps = -(-exact.numerator // exact.denominator) if rounding == "up" else int(exact)
    overflow = steps > INT64_MAX
    steps = min(steps, INT64_MAX)
    return Quantity(steps * granule(resource), amount.format), overflow


def scale_proportionally(
    amount: Quantity,
    multiplier: Quantity,
    divisor: Quantity,
    resource: str,
    rounding: Rounding = "down",
) -> tuple[Quantity, bool]:
    """amount * multiplier / divisor, all three counted in whole steps as upstream does."""
    factor = Fraction(steps_of(multiplier, resource), steps_of(divisor, resource))
    return multiply(amount, factor, resource, rounding)


def nonzero(amount: Quantity | None) -> Quantity | None:
    """The amount, or None when it is missing or zero (upstream treats both as unset)."""
    return amount if amount is not None and not amount.is_zero() else None


def proportional_limit(
    resource: str,
    original_limit: Quantity | None,
    original_request: Quantity | None,
    new_request: Quantity | None,
    default_limit: Quantity | None = None,
) -> tuple[Quantity | None, str | None]:
    """The limit keeping the original limit/request ratio for `new_request`, and a note.

    No limit (and no LimitRange default standing in for it) or no new request -> None.
    No original request, or limit == request -> the limit equals the new request.
    Otherwise new limit = original limit * new request / original request, rounded
    down to 1m (CPU) or 1 unit, capped at int64 steps (with a note) like upstream.
    """
    limit = nonzero(original_limit) or nonzero(default_limit)
    if limit is None:
        return None, f"{resource}: limit NOT set since originalLimit is nil or 0"
    if nonzero(new_request) is None or new_request is None:
        return None, f"{resource}: limit NOT set since recommendedRequest is nil or 0"
    request = nonzero(original_request)
    if request is None or request.milli_value() == limit.milli_value():
        return new_request, None
    scaled, overflow = scale_proportionally(limit, new_request, request, resource)
    note = f"{resource}: failed to keep limit to request ratio; capping limit to int64"
    return scaled, note if overflow else None


def boundary_request(
    resource: str,
    container: ContainerResources,
    boundary: Quantity | None,
    default_limit: Quantity | None,
) -> Quantity | None:
    """The request whose proportional limit lands on `boundary` (a LimitRange max or min).

    None when there is no boundary or no limit to keep in proportion (no limit and
    no default); the boundary itself when the container has no request.
    """
    boundary = nonzero(boundary)
    limit = nonzero(container.limits.get(resource)) or nonzero(default_limit)
    if boundary is None or limit is None:
        return None
    request = nonzero(container.requests.get(resource))
    if request is None:
        return boundary
    return scale_proportionally(request, boundary, limit, resource)[0]


def limits_follow(policy: ContainerResourcePolicy | None) -> bool:
    """Whether a write moves the container's limits with its requests (RequestsAndLimits,
    the default) or leaves them alone (RequestsOnly)."""
    values = policy.effective_controlled_values() if policy else None
    return values is not ControlledValues.REQUESTS_ONLY


def new_container_resources(
    container: ContainerResources,
    target: Mapping[str, Quantity],
    policy: ContainerResourcePolicy | None = None,
    limit_range: LimitRangeItem | None = None,
) -> ContainerUpdate:
    """The requests and limits to set: requests := target; limits scaled or left alone.

    RequestsAndLimits: cpu/memory limits keep the original limit/request ratio (a
    LimitRange default stands in for a missing limit; no limit stays no limit), then
    are lowered to request * maxLimitRequestRatio where the LimitRange has one.
    RequestsOnly: limits untouched; a request is raised to limit / ratio if needed.
    Upstream ignores maxLimitRequestRatio, so the API server could reject its pods;
    we keep the pods admissible instead.
    """
    requests = ResourceList(container.requests)
    requests.update(target)
    limits = ResourceList(container.limits)
    notes: list[str] = []
    defaults = (limit_range.default if limit_range else None) or ResourceList()
    ratios = (limit_range.max_limit_request_ratio if limit_range else None) or ResourceList()
    follow = limits_follow(policy)
    for resource in LIMIT_SCALED_RESOURCES:
        if resource not in target:
            continue
        ratio = nonzero(ratios.get(resource))
        if follow:
            limit, note = proportional_limit(
                resource,
                container.limits.get(resource),
                container.requests.get(resource),
                target[resource],
                defaults.get(resource),
            )
            if limit is not None:
                limits[resource] = limit
            notes += [note] if note else []
            if ratio is not None and resource in limits and nonzero(requests[resource]):
                ceiling, _ = multiply(requests[resource], ratio.value, resource)
                if limits[resource] > ceiling:
                    limits[resource] = Quantity(ceiling.nanos, limits[resource].format)
                    notes.append(f"{resource} limit lowered to fit maxLimitRequestRatio")
        elif ratio is not None and nonzero(limits.get(resource)) is not None:
            floor, _ = multiply(limits[resource], 1 / ratio.value, resource, "up")
            if requests[resource] < floor:
                requests[resource] = Quantity(floor.nanos, requests[resource].format)
                notes.append(f"{resource} request raised to fit maxLimitRequestRatio")
    updated = ContainerResources(name=container.name, requests=requests, limits=limits)
    return ContainerUpdate(resources=updated, notes=tuple(notes))


def fit_pod_limit_ratio(
    containers: Sequence[ContainerResources],
    movable: Collection[tuple[str, str]],
    pod_range: LimitRangeItem | None,
) -> tuple[list[ContainerResources], list[tuple[str, str]]]:
    """Lower the movable (container, resource) limits until the pod's total limit over its
    total request is within the Pod LimitRange's maxLimitRequestRatio; also which moved.

    The LimitRanger checks a Pod item's ratio on the pod's sums, so containers scaled by
    different factors can break it while each keeps its own ratio. Each movable limit
    gives up a share of the excess proportional to its headroom above its request,
    never going under that request; the limits we did not write stay as they are.
    """
    ratios = (pod_range.max_limit_request_ratio if pod_range else None) or ResourceList()
    fitted = list(containers)
    lowered: list[tuple[str, str]] = []
    for resource in LIMIT_SCALED_RESOURCES:
        ratio = nonzero(ratios.get(resource))
        if ratio is None:
            continue
        zero = Quantity(0)
        requests = sum(steps_of(c.requests.get(resource) or zero, resource) for c in fitted)
        limits = sum(steps_of(c.limits.get(resource) or zero, resource) for c in fitted)
        excess = Fraction(limits) - requests * Fraction(ratio.nanos, 10**9)
        headroom = {
            c.name: steps_of(c.limits[resource], resource)
            - steps_of(c.requests.get(resource) or zero, resource)
            for c in fitted
            if (c.name, resource) in movable and resource in c.limits
        }
        room = sum(h for h in headroom.values() if h > 0)
        if requests == 0 or excess <= 0 or room == 0:
            continue
        for index, container in enumerate(fitted):
            share = headroom.get(container.name, 0)
            if share <= 0:
                continue
            cut = math.ceil(min(excess, Fraction(room)) * share / room)
            limits_after = ResourceList(container.limits)
            steps = steps_of(container.limits[resource], resource) - cut
            limits_after[resource] = Quantity(
                steps * granule(resource), container.limits[resource].format
            )
            fitted[index] = ContainerResources(container.name, container.requests, limits_after)
            lowered.append((container.name, resource))
    return fitted, lowered
