"""Capping to policies and LimitRanges; every expected value worked out by hand."""

from __future__ import annotations

from typing import Any

from tailor.api import (
    ContainerResourcePolicy,
    LimitRangeItem,
    PodResourcePolicy,
    RecommendedContainerResources,
    ResourceList,
)
from tailor.capping import (
    ContainerResources,
    apply_container_policy,
    apply_resource_policy,
    cap_recommendations_for_pod,
    cap_to_container_limit_range,
    cap_to_pod_limit_range,
)
from tailor.quantity import Quantity


def rec(
    name: str, target: dict[str, Any], **bounds: dict[str, Any]
) -> RecommendedContainerResources:
    return RecommendedContainerResources(
        container_name=name,
        target=ResourceList(target),
        lower_bound=ResourceList(bounds["lower"]) if "lower" in bounds else None,
        upper_bound=ResourceList(bounds["upper"]) if "upper" in bounds else None,
    )


def policy(**fields: Any) -> ContainerResourcePolicy:
    return ContainerResourcePolicy.model_validate(fields)


def pod_policy(*entries: dict[str, Any]) -> PodResourcePolicy:
    return PodResourcePolicy.model_validate({"containerPolicies": list(entries)})


def item(**fields: Any) -> LimitRangeItem:
    return LimitRangeItem.model_validate(fields)


def container(
    name: str, requests: dict[str, Any], limits: dict[str, Any] | None = None
) -> ContainerResources:
    return ContainerResources(name, ResourceList(requests), ResourceList(limits or {}))


# --- the container policy (recommender side) ---------------------------------------------


def test_min_and_max_allowed_clamp_every_bound_and_keep_the_uncapped_target() -> None:
    capping = apply_container_policy(
        rec(
            "app",
            {"cpu": "10m", "memory": "5Gi"},
            lower={"cpu": "5m", "memory": "100Mi"},
            upper={"cpu": "3", "memory": "8Gi"},
        ),
        policy(
            containerName="*",
            minAllowed={"cpu": "25m", "memory": "50Mi"},
            maxAllowed={"cpu": "2", "memory": "4Gi"},
        ),
    )
    assert capping is not None
    capped = capping.capped
    assert capped.target == ResourceList(cpu="25m", memory="4Gi")
    assert capped.lower_bound == ResourceList(cpu="25m", memory="100Mi")
    assert capped.upper_bound == ResourceList(cpu="2", memory="4Gi")
    assert capping.uncapped == ResourceList(cpu="10m", memory="5Gi")
    assert capped.uncapped_target == capping.uncapped
    assert capping.notes == ("cpu capped to minAllowed", "memory capped to maxAllowed")


def test_inputs_are_not_modified() -> None:
    raw = rec("app", {"cpu": "10m", "memory": "1Gi"}, lower={"cpu": "1m"})
    before = raw.model_copy(deep=True)
    capping = apply_container_policy(raw, policy(minAllowed={"cpu": "25m"}))
    assert capping is not None
    capping.capped.target["cpu"] = Quantity.parse("7")
    assert raw == before


def test_named_policy_overrides_the_wildcard() -> None:
    resource_policy = pod_policy(
        {"containerName": "*", "minAllowed": {"cpu": "100m"}, "maxAllowed": {"cpu": "1"}},
        {"containerName": "app", "maxAllowed": {"cpu": "500m"}},
    )
    capped = apply_resource_policy(
        [
            rec("sidecar", {"cpu": "50m"}),
            rec("app", {"cpu": "800m"}),
            rec("app-low", {"cpu": "50m"}),
        ],
        resource_policy,
    )
    # Sorted by name; "app" uses only its own entry (max 500m, no min), the rest use "*".
    assert [(r.container_name, r.target) for r in capped] == [
        ("app", ResourceList(cpu="500m")),
        ("app-low", ResourceList(cpu="100m")),
        ("sidecar", ResourceList(cpu="100m")),
    ]
    low = apply_resource_policy([rec("app", {"cpu": "50m"})], resource_policy)
    assert low[0].target == ResourceList(cpu="50m")  # "*"'s min does not reach "app"


def test_mode_off_gives_no_recommendation() -> None:
    assert apply_container_policy(rec("proxy", {"cpu": "1"}), policy(mode="Off")) is None
    resource_policy = pod_policy({"containerName": "proxy", "mode": "Off"})
    kept = apply_resource_policy(
        [rec("proxy", {"cpu": "1"}), rec("app", {"cpu": "1"})], resource_policy
    )
    assert [r.container_name for r in kept] == ["app"]


def test_uncontrolled_resources_are_dropped_everywhere() -> None:
    capping = apply_container_policy(
        rec("app", {"cpu": "1", "memory": "1Gi"}, lower={"cpu": "500m", "memory": "512Mi"}),
        policy(controlledResources=["memory"]),
    )
    assert capping is not None
    assert capping.capped.target == ResourceList(memory="1Gi")
    assert capping.capped.lower_bound == ResourceList(memory="512Mi")
    assert capping.uncapped == ResourceList(memory="1Gi")


def test_no_policy_and_zero_bounds_change_nothing() -> None:
    raw = rec("app", {"cpu": "3", "memory": "1Gi"})
    unchanged = apply_container_policy(raw, None)
    assert unchanged is not None and unchanged.capped.target == raw.target
    zero = apply_container_policy(raw, policy(maxAllowed={"cpu": "0"}, minAllowed={"memory": "0"}))
    assert zero is not None and zero.capped.target == raw.target


def test_max_wins_when_a_global_max_is_below_min_allowed() -> None:
    # A policy with minAllowed above its own maxAllowed is refused (test_api_models).
    capping = apply_container_policy(
        rec("app", {"cpu": "500m"}),
        policy(minAllowed={"cpu": "2"}),
        global_max_allowed=ResourceList(cpu="1"),
    )
    assert capping is not None and capping.capped.target == ResourceList(cpu="1")


def test_global_max_fills_resources_the_policy_leaves_open() -> None:
    capping = apply_container_policy(
        rec("app", {"cpu": "8", "memory": "8Gi"}),
        policy(maxAllowed={"memory": "2Gi"}),
        global_max_allowed=ResourceList(cpu="4", memory="1Gi"),
    )
    # The policy's own memory max (2Gi) beats the global one; cpu falls back to it.
    assert capping is not None and capping.capped.target == ResourceList(cpu="4", memory="2Gi")


# --- Container LimitRange -------------------------------------------------------------


LIMITED = container("app", {"cpu": "100m", "memory": "100Mi"}, {"cpu": "200m", "memory": "200Mi"})
CONTAINER_ITEM = item(
    type="Container", max={"cpu": "1", "memory": "1Gi"}, min={"cpu": "50m", "memory": "64Mi"}
)


def test_container_max_caps_the_request_so_the_scaled_limit_fits() -> None:
    values, notes = cap_to_container_limit_range(
        ResourceList(cpu="800m", memory="700Mi"), LIMITED, CONTAINER_ITEM
    )
    # limit/request = 2, so requests may reach max / 2: 500m and 512Mi.
    assert values == ResourceList(cpu="500m", memory="512Mi")
    assert values.to_api() == {"cpu": "500m", "memory": "512Mi"}
    assert notes == [
        "cpu capped to fit Max in container LimitRange",
        "memory capped to fit Max in container LimitRange",
    ]


def test_container_min_raises_the_request_to_min() -> None:
    values, notes = cap_to_container_limit_range(
        ResourceList(cpu="10m", memory="10Mi"), LIMITED, CONTAINER_ITEM
    )
    # For the limit, min/2 would do (25m, 32Mi), but the request itself must reach min.
    assert values == ResourceList(cpu="50m", memory="64Mi")
    assert notes == [
        "cpu capped to fit Min in container LimitRange",
        "memory capped to fit Min in container LimitRange",
    ]


def test_default_limit_stands_in_when_the_container_has_none() -> None:
    bare = container("app", {"cpu": "100m"})
    values, _ = cap_to_container_limit_range(
        ResourceList(cpu="500m"),
        bare,
        item(type="Container", max={"cpu": "600m"}, default={"cpu": "300m"}),
    )
    assert values == ResourceList(cpu="200m")  # 100m * 600m / 300m
    no_default, _ = cap_to_container_limit_range(
        ResourceList(cpu="500m"), bare, item(type="Container", max={"cpu": "600m"})
    )
    assert no_default == ResourceList(cpu="500m")  # no limit to keep in proportion


# --- Pod LimitRange across two containers -----------------------------------------------


def test_pod_max_scales_every_container_proportionally() -> None:
    containers = [
        container("a", {"cpu": "200m"}, {"cpu": "400m"}),  # limit/request 2
        container("b", {"cpu": "100m"}, {"cpu": "100m"}),  # limit == request
    ]
    fitted = cap_to_pod_limit_range(
        [
            rec("a", {"cpu": "400m"}, lower={"cpu": "100m"}, upper={"cpu": "1"}),
            rec("b", {"cpu": "300m"}, lower={"cpu": "100m"}, upper={"cpu": "1"}),
        ],
        containers,
        item(type="Pod", max={"cpu": "1"}),
    )
    a, b = fitted
    # Target limits 800m + 300m = 1100m > 1: factor 10/11 -> 363.6m, 272.7m, rounded down.
    assert (a.target, b.target) == (ResourceList(cpu="363m"), ResourceList(cpu="272m"))
    # Lower bound limits 200m + 100m fit: unchanged.
    assert (a.lower_bound, b.lower_bound) == (ResourceList(cpu="100m"), ResourceList(cpu="100m"))
    # Upper bound limits 2 + 1 = 3: factor 1/3.
    assert (a.upper_bound, b.upper_bound) == (ResourceList(cpu="333m"), ResourceList(cpu="333m"))


def test_pod_min_raises_requests_proportionally() -> None:
    containers = [container("a", {"memory": "256Mi"}), container("b", {"memory": "256Mi"})]
    a, b = cap_to_pod_limit_range(
        [rec("a", {"memory": "200Mi"}), rec("b", {"memory": "300Mi"})],
        containers,
        item(type="Pod", min={"memory": "1Gi"}),
    )
    # 500Mi < 1Gi: a gets 0.4 * 2^30 = 429496729.6 -> 429496730, b 0.6 * 2^30 -> 644245095.
    assert a.target == ResourceList(memory="429496730")
    assert b.target == ResourceList(memory="644245095")
    assert a.target["memory"] + b.target["memory"] >= Quantity.parse("1Gi")


def test_pod_max_leaves_containers_without_recommendation_alone() -> None:
    containers = [
        container("a", {"cpu": "200m"}, {"cpu": "400m"}),
        container("b", {"cpu": "100m"}, {"cpu": "100m"}),
        container("c", {"cpu": "300m"}, {"cpu": "300m"}),  # no recommendation (mode Off)
    ]
    a, b = cap_to_pod_limit_range(
        [rec("a", {"cpu": "400m"}), rec("b", {"cpu": "300m"})],
        containers,
        item(type="Pod", max={"cpu": "1"}),
    )
    # c keeps its 300m limit, so a and b share 700m of limit: factor 700/1100.
    assert (a.target, b.target) == (ResourceList(cpu="254m"), ResourceList(cpu="190m"))


def test_pod_totals_within_bounds_are_untouched() -> None:
    recs = [rec("a", {"cpu": "100m"}), rec("b", {"cpu": "100m"})]
    containers = [container("a", {"cpu": "100m"}, {"cpu": "200m"}), container("b", {"cpu": "100m"})]
    assert (
        cap_to_pod_limit_range(
            recs, containers, item(type="Pod", max={"cpu": "1"}, min={"cpu": "100m"})
        )
        == recs
    )
    assert cap_to_pod_limit_range(recs, containers, None) == recs


# --- the whole pipeline for a pod (admission / updater) ----------------------------------


def test_requests_only_caps_the_target_at_the_current_limit() -> None:
    worker = container("worker", {"cpu": "100m"}, {"cpu": "500m"})
    requests_only = pod_policy({"containerName": "worker", "controlledValues": "RequestsOnly"})
    result = cap_recommendations_for_pod([rec("worker", {"cpu": "800m"})], [worker], requests_only)
    assert result.recommendations[0].target == ResourceList(cpu="500m")
    assert result.notes == {"worker": ["cpu capped to container limit"]}
    both = cap_recommendations_for_pod([rec("worker", {"cpu": "800m"})], [worker], None)
    assert both.recommendations[0].target == ResourceList(cpu="800m")
    assert both.notes == {}


def test_policy_wins_over_the_container_limit_range() -> None:
    app = container("app", {"cpu": "100m"}, {"cpu": "100m"})
    result = cap_recommendations_for_pod(
        [rec("app", {"cpu": "500m"})],
        [app],
        pod_policy({"containerName": "*", "minAllowed": {"cpu": "2"}}),
        container_limit_range=item(type="Container", max={"cpu": "1"}),
    )
    assert result.recommendations[0].target == ResourceList(cpu="2")
    assert result.notes == {"app": ["cpu capped to minAllowed"]}


def test_pipeline_drops_off_and_unknown_containers_and_applies_every_stage() -> None:
    containers = [
        container("a", {"cpu": "200m", "memory": "128Mi"}, {"cpu": "400m", "memory": "256Mi"}),
        container("b", {"cpu": "100m"}, {"cpu": "100m"}),
        container("proxy", {"cpu": "300m"}, {"cpu": "300m"}),
    ]
    recs = [
        rec("a", {"cpu": "400m", "memory": "1Gi"}),
        rec("b", {"cpu": "300m"}),
        rec("proxy", {"cpu": "50m"}),
        rec("gone", {"cpu": "1"}),
    ]
    resource_policy = pod_policy(
        {"containerName": "proxy", "mode": "Off"},
        {"containerName": "*", "controlledResources": ["cpu"]},
    )
    result = cap_recommendations_for_pod(
        recs,
        containers,
        resource_policy,
        container_limit_range=item(type="Container", max={"cpu": "500m"}),
        pod_limit_range=item(type="Pod", max={"cpu": "1"}),
    )
    # memory is not controlled; pod max first (254m, 190m as above), then the
    # container max: a's limit/request is 2, so a may request at most 250m.
    assert [(r.container_name, r.target) for r in result.recommendations] == [
        ("a", ResourceList(cpu="250m")),
        ("b", ResourceList(cpu="190m")),
    ]
    assert result.notes == {"a": ["cpu capped to fit Max in container LimitRange"]}


def test_without_rules_the_recommendations_come_out_as_through_rules_that_bound_nothing() -> None:
    """No policy and no LimitRange (most pods the updater plans) must give what the
    pipeline gives when its rules bound nothing (an empty LimitRange item each)."""
    containers = [
        ContainerResources("app", ResourceList({"cpu": "1", "memory": "1Gi"})),
        ContainerResources("side", ResourceList({"cpu": "100m"})),
    ]
    wanted = [
        rec("side", {"cpu": "150m", "memory": "64Mi", "ephemeral-storage": "1Gi"}),
        rec("gone", {"cpu": "2"}),
        rec("app", {"cpu": "3"}, lower={"cpu": "1", "nvidia.com/gpu": "1"}, upper={"cpu": "5"}),
        rec("app", {"cpu": "2", "memory": "2Gi"}, lower={"cpu": "1"}),
    ]
    unbounded = cap_recommendations_for_pod(wanted, containers, None)
    empty = LimitRangeItem(type="Container"), LimitRangeItem(type="Pod")
    through = cap_recommendations_for_pod(wanted, containers, None, *empty)
    assert unbounded == through
    assert [r.container_name for r in unbounded.recommendations] == ["app", "side"]
    assert unbounded.recommendations[0].target == ResourceList({"cpu": "2", "memory": "2Gi"})
    assert unbounded.recommendations[0].lower_bound == ResourceList({"cpu": "1"})
    assert unbounded.recommendations[0].upper_bound is None
    assert unbounded.recommendations[1].target == ResourceList({"cpu": "150m", "memory": "64Mi"})


def test_a_container_recommended_twice_is_fitted_to_the_pod_with_its_last() -> None:
    """The Pod LimitRange sums one recommendation per container, the last one given."""
    containers = [container("a", {"cpu": "100m"}), container("b", {"cpu": "100m"})]
    wanted = [rec("a", {"cpu": "4"}), rec("b", {"cpu": "300m"}), rec("a", {"cpu": "300m"})]
    result = cap_recommendations_for_pod(
        wanted, containers, None, pod_limit_range=item(type="Pod", max={"cpu": "400m"})
    )
    assert [(r.container_name, r.target) for r in result.recommendations] == [
        ("a", ResourceList(cpu="200m")),
        ("b", ResourceList(cpu="200m")),
    ]


def test_the_pipeline_leaves_the_recommendations_it_is_given_as_they_were() -> None:
    containers = [container("a", {"cpu": "200m"}, {"cpu": "400m"}), container("b", {"cpu": "1"})]
    wanted = [rec("a", {"cpu": "2", "memory": "1Gi"}, lower={"cpu": "1"}), rec("b", {"cpu": "3"})]
    before = [r.model_copy(deep=True) for r in wanted]
    policy = pod_policy({"containerName": "b", "minAllowed": {"cpu": "4"}})
    limit_ranges = item(type="Container", max={"cpu": "1"}), item(type="Pod", max={"cpu": "2"})
    capped = cap_recommendations_for_pod(wanted, containers, policy, *limit_ranges)
    assert [r.target for r in capped.recommendations] != [r.target for r in before]
    unbounded = cap_recommendations_for_pod(wanted, containers, None)
    assert unbounded.recommendations == before
    unbounded.recommendations[0].target["cpu"] = Quantity.parse("1")  # a copy, not the input
    assert wanted == before
