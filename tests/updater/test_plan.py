"""Resize plans the API server accepts: QoS kept, limits following requests, nothing added."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tailor.api.limitrange import LimitRangeItem
from tailor.api.meta import ResourceList
from tailor.api.vpa import PodResourcePolicy
from tailor.pod_level import container_qos
from tailor.quantity import Quantity
from tests.updater.pods import container, pod
from updater.due_targets import Target
from updater.plan import (
    ContainerResize,
    PodRules,
    Qos,
    ResizePlan,
    Skipped,
    plan_resize,
)

MI = 2**20
GI = 2**30


def resized(
    pod_json: dict[str, Any], targets: dict[str, Target], rules: PodRules | None = None
) -> ResizePlan:
    plan = plan_resize(pod_json, targets, rules)
    assert isinstance(plan, ResizePlan), plan
    return plan


def only(plan: ResizePlan) -> ContainerResize:
    assert len(plan.containers) == 1, plan
    return plan.containers[0]


def ints(values: Mapping[str, Quantity]) -> dict[str, int]:
    """Millicores and bytes, to compare amounts whatever their text format."""
    return {r: q.milli_value() if r == "cpu" else q.int_value() for r, q in values.items()}


BURSTABLE = container(
    "app",
    requests={"cpu": "250m", "memory": "256Mi"},
    limits={"cpu": "500m", "memory": "512Mi"},
)
GUARANTEED = container(
    "app", requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}
)


@pytest.mark.parametrize(
    ("containers", "qos"),
    [
        ([GUARANTEED], Qos.GUARANTEED),
        ([container("a", limits={"cpu": "1", "memory": "1Gi"})], Qos.GUARANTEED),  # defaulted
        ([GUARANTEED, container("b", requests={"cpu": "1"}, limits={"cpu": "1"})], Qos.BURSTABLE),
        (
            [container("a", requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1"})],
            Qos.BURSTABLE,
        ),
        ([BURSTABLE], Qos.BURSTABLE),
        ([container("a", requests={"memory": "64Mi"})], Qos.BURSTABLE),
        ([container("a"), container("b", requests={"cpu": "10m"})], Qos.BURSTABLE),
        ([container("a", requests={"ephemeral-storage": "1Gi"})], Qos.BEST_EFFORT),
        ([container("a"), container("b")], Qos.BEST_EFFORT),
    ],
)
def test_qos_of_app_containers(containers: list[dict[str, Any]], qos: Qos) -> None:
    assert container_qos(containers) is qos


def test_burstable_memory_limits_are_the_plans_and_cpu_limits_keep_their_ratio() -> None:
    plan = resized(pod([BURSTABLE]), {"app": Target(0.5, 300 * MI, 400 * MI)})
    change = only(plan)
    assert ints(change.requests) == {"cpu": 500, "memory": 300 * MI}
    assert ints(change.limits) == {"cpu": 1000, "memory": 400 * MI}  # the plan's memoryLimit
    assert container_qos([{"name": "app", "resources": change.resources()}]) is Qos.BURSTABLE


def test_without_a_planned_memory_limit_the_ratio_is_kept() -> None:
    plan = resized(pod([BURSTABLE]), {"app": Target(0.25, 100 * MI, None)})
    change = only(plan)
    assert ints(change.requests) == {"cpu": 250, "memory": 100 * MI}
    assert ints(change.limits) == {"cpu": 500, "memory": 200 * MI}  # upstream's proportional rule


def test_the_plans_memory_limit_stays_within_the_limit_ranges_caps() -> None:
    capped = LimitRangeItem(
        type="Container",
        max=ResourceList({"memory": Quantity.parse("700Mi")}),
        max_limit_request_ratio=ResourceList({"memory": Quantity.parse("4")}),
    )
    rules = PodRules(container_limit_range=capped)
    over_max = only(resized(pod([BURSTABLE]), {"app": Target(0.25, 200 * MI, 900 * MI)}, rules))
    assert ints(over_max.limits)["memory"] == 700 * MI
    over_ratio = only(resized(pod([BURSTABLE]), {"app": Target(0.25, 100 * MI, 600 * MI)}, rules))
    assert ints(over_ratio.limits)["memory"] == 400 * MI  # request x maxLimitRequestRatio
    under = only(resized(pod([BURSTABLE]), {"app": Target(0.25, 300 * MI, 100 * MI)}, rules))
    assert ints(under.limits)["memory"] == 300 * MI  # never under the request
    above = only(resized(pod([BURSTABLE]), {"app": Target(0.25, 800 * MI, 900 * MI)}, rules))
    assert ints(above.requests)["memory"] == ints(above.limits)["memory"] == 700 * MI


def test_a_planned_memory_limit_that_would_change_the_qos_class_keeps_the_ratio() -> None:
    app = container(
        "app", requests={"cpu": "1", "memory": "256Mi"}, limits={"cpu": "1", "memory": "512Mi"}
    )
    plan = resized(pod([app]), {"app": Target(None, 300 * MI, 300 * MI)})
    assert isinstance(plan, ResizePlan)
    change = only(plan)
    assert ints(change.limits) == {"cpu": 1000, "memory": 600 * MI}  # Guaranteed otherwise
    assert any("memory limit kept in proportion" in note for note in plan.notes)


def test_a_memory_limit_alone_changes_nothing_in_a_burstable_pod() -> None:
    assert not resized(pod([BURSTABLE]), {"app": Target(None, None, GI)}).changes


def test_limit_ratio_rounds_down_as_upstream_does() -> None:
    app = container("app", requests={"cpu": "300m"}, limits={"cpu": "400m"})
    change = only(resized(pod([app]), {"app": Target(0.101, None, None)}))
    assert ints(change.requests) == {"cpu": 101}
    assert ints(change.limits) == {"cpu": 134}  # 400 * 101 / 300 = 134.67, rounded down


def test_a_burstable_container_with_equal_request_and_limit_moves_both() -> None:
    app = container(
        "app", requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "2Gi"}
    )
    change = only(resized(pod([app]), {"app": Target(2.0, GI, None)}))
    assert ints(change.requests) == {"cpu": 2000, "memory": GI}
    assert ints(change.limits) == {"cpu": 2000, "memory": 2 * GI}


def test_burstable_container_without_limits_gets_none() -> None:
    app = container("app", requests={"cpu": "100m", "memory": "64Mi"})
    change = only(resized(pod([app]), {"app": Target(0.2, 128 * MI, 256 * MI)}))
    assert ints(change.limits) == {}
    assert change.resources() == {"requests": {"cpu": "200m", "memory": str(128 * MI)}}


@pytest.mark.parametrize(
    ("target", "memory"),
    [
        (Target(0.5, 300 * MI, 400 * MI), 400 * MI),  # the larger of memory and memoryLimit
        (Target(0.5, 300 * MI, None), 300 * MI),
        (Target(0.5, 300 * MI, 300 * MI), 300 * MI),
    ],
)
def test_guaranteed_requests_equal_limits(target: Target, memory: int) -> None:
    change = only(resized(pod([GUARANTEED]), {"app": target}))
    assert ints(change.requests) == {"cpu": 500, "memory": memory}
    assert change.limits == change.requests
    assert container_qos([{"name": "app", "resources": change.resources()}]) is Qos.GUARANTEED


def test_guaranteed_pod_given_only_limits_gets_requests_in_the_patch() -> None:
    app = container("app", limits={"cpu": "1", "memory": "1Gi"})
    change = only(resized(pod([app]), {"app": Target(2.0, None, None)}))
    assert ints(change.requests) == {"cpu": 2000, "memory": GI}
    assert ints(change.limits) == {"cpu": 2000, "memory": GI}


def test_guaranteed_memory_limit_alone_changes_nothing() -> None:
    assert not resized(pod([GUARANTEED]), {"app": Target(None, None, 2 * GI)}).changes


def test_best_effort_pod_is_skipped() -> None:
    plan = plan_resize(pod([container("app")]), {"app": Target(0.5, 300 * MI, 400 * MI)})
    assert isinstance(plan, Skipped)
    assert "BestEffort" in plan.reason


def test_a_resource_the_container_does_not_request_is_not_added() -> None:
    app = container("app", requests={"memory": "128Mi"}, limits={"memory": "256Mi"})
    change = only(resized(pod([app]), {"app": Target(2.0, 64 * MI, None)}))
    assert ints(change.requests) == {"memory": 64 * MI}
    assert ints(change.limits) == {"memory": 128 * MI}
    assert change.resources() == {
        "requests": {"memory": str(64 * MI)},
        "limits": {"memory": "128Mi"},  # scaled, in the original limit's format
    }
    assert not resized(pod([app]), {"app": Target(2.0, None, None)}).changes


def test_containers_without_a_target_are_left_out_of_the_patch() -> None:
    sidecar = container("envoy", requests={"cpu": "50m", "memory": "32Mi"})
    plan = resized(
        pod([sidecar, BURSTABLE]), {"app": Target(0.5, None, None), "gone": Target(1, 1, 1)}
    )
    assert [c.name for c in plan.containers] == ["app"]
    assert plan.patch() == {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "resources": {
                        "requests": {"cpu": "500m", "memory": "256Mi"},  # untouched: as written
                        "limits": {"cpu": "1", "memory": "512Mi"},
                    },
                }
            ]
        }
    }


def test_targets_equal_to_the_spec_plan_no_changes() -> None:
    same = Target(0.25, 256 * MI, 512 * MI)
    plan = resized(pod([BURSTABLE]), {"app": same})
    assert plan == ResizePlan(())
    assert not plan.changes
    assert plan.patch() == {"spec": {"containers": []}}
    guaranteed = resized(pod([GUARANTEED]), {"app": Target(1.0, GI, GI)})
    assert not guaranteed.changes


@pytest.mark.parametrize(
    ("cores", "text"),
    [
        (0.2501, "251m"),
        (0.25, "250m"),
        (1.065, "1065m"),
        (0.1 + 0.2, "301m"),  # 0.30000000000000004: rounded up as every VPA amount is
        (2.0, "2"),
        (0.0001, "1m"),
        (0.0, "1m"),
    ],
)
def test_cpu_rounds_up_to_whole_millicores(cores: float, text: str) -> None:
    app = container("app", requests={"cpu": "100m"})
    change = only(resized(pod([app]), {"app": Target(cores, None, None)}))
    assert change.resources() == {"requests": {"cpu": text}}


@pytest.mark.parametrize(("memory", "text"), [(1000.2, "1001"), (2979509237.0, "2979509237")])
def test_memory_rounds_up_to_whole_bytes(memory: float, text: str) -> None:
    app = container("app", requests={"memory": "1Gi"}, limits={"memory": "1Gi"})
    change = only(resized(pod([app]), {"app": Target(None, memory, None)}))
    assert change.resources()["requests"] == {"memory": text}
    # The ratio is 1: the limit is the rounded request, not a rounded product.
    assert change.resources()["limits"] == {"memory": text}


def test_other_resources_are_neither_sent_nor_changed() -> None:
    app = container(
        "app",
        requests={"cpu": "100m", "ephemeral-storage": "1Gi"},
        limits={"nvidia.com/gpu": "1"},
    )
    change = only(resized(pod([app]), {"app": Target(0.2, None, None)}))
    assert change.resources() == {"requests": {"cpu": "200m"}}


def test_describe_names_containers_and_new_requests() -> None:
    sidecar = container("envoy", requests={"cpu": "50m"})
    plan = resized(
        pod([BURSTABLE, sidecar]), {"app": Target(1.5, GI, None), "envoy": Target(0.1, None, None)}
    )
    assert plan.describe() == f"app: cpu 1500m, memory {GI}; envoy: cpu 100m"


def test_a_pod_limit_request_ratio_holds_on_the_resized_pods_totals() -> None:
    """The LimitRanger checks a Pod item on the sums: the limits we write give way."""
    two = pod(
        [container("a", {"cpu": "100m"}, {"cpu": "1"}), container("b", {"cpu": "1"}, {"cpu": "1"})]
    )
    targets = {"a": Target(1.0, None, None), "b": Target(0.1, None, None)}
    free = plan_resize(two, targets)
    assert isinstance(free, ResizePlan)
    assert [ints(c.limits)["cpu"] for c in free.containers] == [10_000, 100]
    item = LimitRangeItem.model_validate({"type": "Pod", "maxLimitRequestRatio": {"cpu": "2"}})
    plan = plan_resize(two, targets, PodRules(pod_limit_range=item))
    assert isinstance(plan, ResizePlan)
    assert [ints(c.limits)["cpu"] for c in plan.containers] == [2100, 100]  # 2.2 / 1.1
    assert plan.notes == ("a: cpu limit lowered to fit the Pod maxLimitRequestRatio",)


def test_a_resource_whose_resize_policy_restarts_the_container_is_said() -> None:
    restarting = container(
        "app",
        {"cpu": "500m", "memory": "256Mi"},
        resizePolicy=[
            {"resourceName": "cpu", "restartPolicy": "NotRequired"},
            {"resourceName": "memory", "restartPolicy": "RestartContainer"},
        ],
    )
    cpu_only = resized(pod([restarting]), {"app": Target(0.75, None, None)})
    assert cpu_only.notes == ()
    both = resized(pod([restarting]), {"app": Target(0.75, 300 * MI, None)})
    assert both.notes == ("app: memory resizePolicy RestartContainer, the kubelet restarts it",)


def test_a_native_sidecar_is_resized_and_a_plain_init_container_is_reported() -> None:
    sidecar = container("proxy", {"cpu": "100m"}, restartPolicy="Always")
    setup = container("setup", {"cpu": "100m"})
    with_sidecar = pod([container("app", {"cpu": "500m"})], init=[setup, sidecar])
    targets = {"proxy": Target(0.8, None, None), "setup": Target(2.0, None, None)}
    plan = plan_resize(with_sidecar, targets)
    assert isinstance(plan, ResizePlan)
    assert plan.containers == (ContainerResize("proxy", {"cpu": Quantity.parse("800m")}, {}, True),)
    assert plan.notes == ("setup: init container, not resized",)
    assert plan.patch() == {
        "spec": {
            "containers": [],
            "initContainers": [{"name": "proxy", "resources": {"requests": {"cpu": "800m"}}}],
        }
    }


def test_an_init_containers_limits_count_in_the_pods_qos_class() -> None:
    """The API server derives QoS from init containers too: a Guaranteed pod whose sidecar
    is Guaranteed must stay so, request and limit moving together."""
    pinned = {"cpu": "100m", "memory": "64Mi"}
    sidecar = container("proxy", pinned, limits=pinned, restartPolicy="Always")
    app = container("app", {"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"})
    plan = plan_resize(pod([app], init=[sidecar]), {"proxy": Target(0.2, 128 * MI, None)})
    assert isinstance(plan, ResizePlan)
    assert ints(only(plan).requests) == ints(only(plan).limits) == {"cpu": 200, "memory": 128 * MI}
    # an init container with a request and no limit makes the pod Burstable, so a
    # RequestsOnly write that leaves the app's limits alone keeps the class
    requests_only = PodRules(
        resource_policy=PodResourcePolicy.model_validate(
            {"containerPolicies": [{"containerName": "*", "controlledValues": "RequestsOnly"}]}
        )
    )
    mixed = pod([app], init=[container("setup", {"cpu": "50m"})])
    lowered = plan_resize(mixed, {"app": Target(0.5, None, None)}, requests_only)
    assert isinstance(lowered, ResizePlan)
    assert ints(only(lowered).requests) == {"cpu": 500, "memory": 1024 * MI}
    alone = plan_resize(pod([app]), {"app": Target(0.5, None, None)}, requests_only)
    assert alone == Skipped("the scheduled amounts would make a Guaranteed pod Burstable")
