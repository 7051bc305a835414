"""Upstream's CPU startup boost (AEP-7862) at admission: more CPU from the pod's creation.

A container whose VPA (or its own container policy) has `startupBoost.cpu` starts with
its CPU request and limit multiplied by the factor, or the quantity added, on top of
what the VPA would set (or, in mode Off or without a recommendation, of what the pod
asked). The pod's annotation (`tailor.startup_boost`) records the boosted and the
unboosted CPU of each container and how long the boost stays once the pod is Ready; the
updater (`updater/boost.py`) reads it to resize the pod back in place. The boost may go
past maxAllowed, as upstream's does.
"""

from __future__ import annotations

import math
from fractions import Fraction

from tailor.api.meta import RESOURCE_CPU, ResourceList
from tailor.api.vpa import CPUStartupBoost
from tailor.limits import ContainerResources
from tailor.quantity import Quantity
from tailor.startup_boost import BoostedCpu


def boost_container(
    resources: ContainerResources, boost: CPUStartupBoost, most: Quantity | None = None
) -> tuple[ContainerResources, BoostedCpu] | None:
    """The container's resources during the boost; None when it requests no CPU to boost or
    `most` (upstream's --max-allowed-cpu-boost) leaves no room above its request. A capped
    request takes its limit down in proportion."""
    request = resources.requests.get(RESOURCE_CPU)
    if request is None or request.is_zero():
        return None
    limit = resources.limits.get(RESOURCE_CPU)
    boosted_request = boost.boosted(request)
    boosted_limit = boost.boosted(limit) if limit is not None else None
    if most is not None and boosted_request > most:
        if most <= request:
            return None
        if boosted_limit is not None:
            share = Fraction(most.milli_value(), boosted_request.milli_value())
            boosted_limit = Quantity.from_milli(math.ceil(boosted_limit.milli_value() * share))
        boosted_request = most
    requests = ResourceList({**resources.requests, RESOURCE_CPU: boosted_request})
    limits = ResourceList(dict(resources.limits))
    if boosted_limit is not None:
        limits[RESOURCE_CPU] = boosted_limit
    record = BoostedCpu(boosted_request, boosted_limit, request, limit)
    return ContainerResources(resources.name, requests, limits), record
