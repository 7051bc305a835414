"""Upstream's CPU startup boost (AEP-7862) at admission: more CPU from the pod's creation.

A container whose VPA (or its own container policy) has `startupBoost.cpu` starts with
its CPU request and limit multiplied by the factor, or the quantity added, on top of
what the VPA would set (or, in mode Off or without a recommendation, of what the pod
asked). The pod's annotation (`tailor.startup_boost`) records the boosted and the
unboosted CPU of each container and how long the boost stays once the pod is Ready; the
updater (`updater/unboost.py`) reads it to resize the pod back in place. The boost may go
past maxAllowed, as upstream's does.
"""

from __future__ import annotations

from tailor.api.limitrange import LimitRangeItem
from tailor.api.meta import RESOURCE_CPU, ResourceList
from tailor.api.vpa import ContainerResourcePolicy, CPUStartupBoost
from tailor.capping import cap_to_container_limit_range
from tailor.limits import ContainerResources, limits_follow, new_container_resources
from tailor.quantity import Quantity
from tailor.startup_boost import BoostedCpu


def boost_container(
    resources: ContainerResources,
    boost: CPUStartupBoost,
    policy: ContainerResourcePolicy | None = None,
    limit_range: LimitRangeItem | None = None,
    most: Quantity | None = None,
) -> tuple[ContainerResources, BoostedCpu] | None:
    """The container's resources during the boost; None when it requests no CPU to boost or
    the caps leave no room above its request. The boosted request is capped by `most`
    (upstream's --max-allowed-cpu-boost) and by the Container LimitRange's max, which the
    API server would enforce by refusing the pod; its limit follows as every write's does
    (`tailor.limits`: the ratio kept, RequestsOnly left alone). Under RequestsOnly the
    request stays just below the container's own CPU limit (1m under, as AEP-7862 asks),
    since the limit does not move with it."""
    request = resources.requests.get(RESOURCE_CPU)
    if request is None or request.is_zero():
        return None
    wanted = boost.boosted(request)
    if most is not None and wanted > most:
        wanted = most
    capped, _ = cap_to_container_limit_range(
        ResourceList({RESOURCE_CPU: wanted}), resources, limit_range
    )
    wanted = capped.get(RESOURCE_CPU, wanted)
    limit = resources.limits.get(RESOURCE_CPU)
    if not limits_follow(policy) and limit is not None and wanted >= limit:
        wanted = Quantity.from_milli(limit.milli_value() - 1)  # a request over its limit is refused
    if wanted <= request:
        return None
    update = new_container_resources(resources, {RESOURCE_CPU: wanted}, policy, limit_range)
    boosted = update.resources
    record = BoostedCpu(
        boosted.requests[RESOURCE_CPU],
        boosted.limits.get(RESOURCE_CPU),
        request,
        resources.limits.get(RESOURCE_CPU),
    )
    return boosted, record
