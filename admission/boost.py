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
    resources: ContainerResources,
    boost: CPUStartupBoost,
    most: Quantity | None = None,
    ceiling: Quantity | None = None,
) -> tuple[ContainerResources, BoostedCpu] | None:
    """The container's resources during the boost; None when it requests no CPU to boost or
    the caps leave no room above its request. `most` (upstream's --max-allowed-cpu-boost)
    caps the request, `ceiling` (a LimitRange's container max, which the API server would
    enforce by refusing the pod) the request and the limit; a capped one takes the other
    down in proportion."""
    request = resources.requests.get(RESOURCE_CPU)
    if request is None or request.is_zero():
        return None
    limit = resources.limits.get(RESOURCE_CPU)
    boosted_request = boost.boosted(request)
    boosted_limit = boost.boosted(limit) if limit is not None else None
    share = Fraction(1)
    if most is not None and boosted_request > most:
        share = Fraction(most.milli_value(), boosted_request.milli_value())
    highest = boosted_limit if boosted_limit is not None else boosted_request
    if ceiling is not None and highest.milli_value() * share > ceiling.milli_value():
        share = Fraction(ceiling.milli_value(), highest.milli_value())
    if share < 1:
        boosted_request = Quantity.from_milli(math.floor(boosted_request.milli_value() * share))
        if boosted_limit is not None:
            boosted_limit = Quantity.from_milli(math.floor(boosted_limit.milli_value() * share))
    if boosted_request <= request:
        return None
    requests = ResourceList({**resources.requests, RESOURCE_CPU: boosted_request})
    limits = ResourceList(dict(resources.limits))
    if boosted_limit is not None:
        limits[RESOURCE_CPU] = boosted_limit
    record = BoostedCpu(boosted_request, boosted_limit, request, limit)
    return ContainerResources(resources.name, requests, limits), record
