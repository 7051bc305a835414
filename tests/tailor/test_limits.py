"""Limit/request proportion and the requests/limits written into a container.

Expected values are worked out by hand from upstream's rules: new limit =
original limit * new request / original request, in whole millicores for CPU and
whole bytes for memory, rounded down.
"""

from __future__ import annotations

import pytest

from tailor.api import ContainerResourcePolicy, LimitRangeItem, ResourceList
from tailor.limits import (
    ContainerResources,
    boundary_request,
    new_container_resources,
    proportional_limit,
)
from tailor.quantity import INT64_MAX, Quantity


def q(text: str) -> Quantity:
    return Quantity.parse(text)


@pytest.mark.parametrize(
    ("resource", "limit", "original_request", "new", "default", "expected"),
    [
        ("cpu", "1", "500m", "300m", None, "600m"),  # ratio 2
        ("memory", "1Gi", "512Mi", "300Mi", None, "600Mi"),  # ratio 2, binary kept
        ("cpu", "500m", "500m", "1234m", None, "1234m"),  # limit == request stays equal
        ("cpu", "1", None, "300m", None, "300m"),  # no request: limit follows request
        ("cpu", None, "250m", "100m", "1", "400m"),  # LimitRange default as the limit
        ("cpu", "0", "250m", "100m", "1", "400m"),  # zero limit counts as unset
        ("cpu", "1", "300m", "100m", None, "333m"),  # 1000*100/300 = 333.3 -> 333m
        ("memory", "3", "2", "5", None, "7"),  # 3*5/2 = 7.5 bytes -> 7
    ],
)
def test_proportional_limit(
    resource: str,
    limit: str | None,
    original_request: str | None,
    new: str,
    default: str | None,
    expected: str,
) -> None:
    result, note = proportional_limit(
        resource,
        q(limit) if limit else None,
        q(original_request) if original_request else None,
        q(new),
        q(default) if default else None,
    )
    assert result is not None and str(result) == expected
    assert note is None


def test_no_limit_and_no_default_means_no_limit() -> None:
    result, note = proportional_limit("cpu", None, q("100m"), q("200m"), None)
    assert result is None
    assert note == "cpu: limit NOT set since originalLimit is nil or 0"


def test_no_new_request_means_no_limit() -> None:
    result, note = proportional_limit("memory", q("1Gi"), q("512Mi"), None, None)
    assert result is None and note is not None and "recommendedRequest" in note


def test_limit_overflow_is_capped_at_int64_like_upstream() -> None:
    # 9e15 cores limit with a 1m request scaled to 1000 cores: 9e24 millicores.
    result, note = proportional_limit("cpu", q("9e15"), q("1m"), q("1000"), None)
    assert result is not None and result.milli_value() == INT64_MAX
    assert note == "cpu: failed to keep limit to request ratio; capping limit to int64"


def test_boundary_request_keeps_the_ratio() -> None:
    container = ContainerResources(
        "app", requests=ResourceList(cpu="100m"), limits=ResourceList(cpu="200m")
    )
    # limit/request = 2, so a 1-core max allows a 500m request.
    assert boundary_request("cpu", container, q("1"), None) == q("500m")
    no_limit = ContainerResources("app", requests=ResourceList(cpu="100m"))
    assert boundary_request("cpu", no_limit, q("1"), None) is None
    assert boundary_request("cpu", no_limit, q("600m"), q("300m")) == q("200m")
    no_request = ContainerResources("app", limits=ResourceList(cpu="200m"))
    assert boundary_request("cpu", no_request, q("1"), None) == q("1")
    assert boundary_request("cpu", container, None, None) is None


def test_requests_and_limits_scale_together_and_other_resources_stay() -> None:
    container = ContainerResources(
        "app",
        requests=ResourceList({"cpu": "200m", "memory": "256Mi", "ephemeral-storage": "1Gi"}),
        limits=ResourceList({"cpu": "400m", "memory": "256Mi", "ephemeral-storage": "2Gi"}),
    )
    update = new_container_resources(container, ResourceList(cpu="300m", memory="300Mi"))
    assert update.resources.requests.to_api() == {
        "cpu": "300m",
        "memory": "300Mi",
        "ephemeral-storage": "1Gi",
    }
    assert update.resources.limits.to_api() == {
        "cpu": "600m",  # ratio 2 kept
        "memory": "300Mi",  # limit == request stays equal
        "ephemeral-storage": "2Gi",
    }
    assert update.notes == ()


def test_limit_range_default_stands_in_for_a_missing_limit() -> None:
    container = ContainerResources("app", requests=ResourceList(cpu="250m"))
    item = LimitRangeItem.model_validate({"type": "Container", "default": {"cpu": "1"}})
    update = new_container_resources(container, ResourceList(cpu="500m"), limit_range=item)
    assert update.resources.limits == ResourceList(cpu="2")  # 1 * 500m / 250m


def test_no_limit_and_no_default_stays_without_limit() -> None:
    container = ContainerResources("app", requests=ResourceList(cpu="250m"))
    update = new_container_resources(container, ResourceList(cpu="500m"))
    assert update.resources.limits == ResourceList()
    assert update.resources.requests == ResourceList(cpu="500m")


def test_limit_is_lowered_to_fit_max_limit_request_ratio() -> None:
    # Admitted with ratio 4 before the LimitRange said 2: 200m * 4 = 800m is too much.
    container = ContainerResources(
        "app", requests=ResourceList(cpu="100m"), limits=ResourceList(cpu="400m")
    )
    item = LimitRangeItem.model_validate(
        {"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}
    )
    update = new_container_resources(container, ResourceList(cpu="200m"), limit_range=item)
    assert update.resources.limits == ResourceList(cpu="400m")
    assert update.notes == ("cpu limit lowered to fit maxLimitRequestRatio",)


def test_requests_only_keeps_limits_and_raises_request_to_fit_the_ratio() -> None:
    container = ContainerResources(
        "app", requests=ResourceList(cpu="400m"), limits=ResourceList(cpu="1")
    )
    policy = ContainerResourcePolicy.model_validate({"controlledValues": "RequestsOnly"})
    item = LimitRangeItem.model_validate(
        {"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}
    )
    update = new_container_resources(container, ResourceList(cpu="300m"), policy, item)
    assert update.resources.limits == ResourceList(cpu="1")
    assert update.resources.requests == ResourceList(cpu="500m")  # 1 / 2
    assert update.notes == ("cpu request raised to fit maxLimitRequestRatio",)
    plain = new_container_resources(container, ResourceList(cpu="300m"), policy)
    assert plain.resources.requests == ResourceList(cpu="300m")
    assert plain.resources.limits == ResourceList(cpu="1")
