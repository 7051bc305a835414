"""A pass plans pods alike once: replicas share their plan, and any field a plan reads
that differs (resources, resize policy, sidecar or not, pod-level resources), or other
targets or rules, makes a plan of its own, equal to the one made for that pod alone."""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from tailor.api.limitrange import LimitRangeItem
from tailor.api.vpa import PodResourcePolicy
from tailor.quantity import QuantityError
from tests.updater.pods import container, pod
from updater.act import checked_plan
from updater.due_targets import Target
from updater.plan import PodRules, ResizePlan
from updater.plans import Plans, template
from updater.priority import priority
from updater.resources import limits_of, requests_of

MI = 2**20
TARGETS = {"app": Target(0.5, 300 * MI, 600 * MI)}
RULES = PodRules()


def replica(name: str) -> dict[str, Any]:
    app = container("app", {"cpu": "100m", "memory": "128Mi"}, {"memory": "256Mi"})
    sidecar = container("proxy", {"cpu": "50m"}, restartPolicy="Always")
    return pod([app], name=name, init=[sidecar])


def test_replicas_share_one_plan() -> None:
    plans = Plans()
    first, second = (
        plans.plan(replica("a"), TARGETS, RULES).planned,
        plans.plan(replica("b"), TARGETS, RULES).planned,
    )
    assert isinstance(first, ResizePlan) and first.changes
    assert second is first
    assert first == checked_plan(replica("b"), TARGETS, RULES)
    made = plans.plan(replica("c"), TARGETS, RULES)
    assert made.rank is not None and made.rank == priority(replica("c"), first)
    assert made.rank[0] == 0 and made.rank[1] < 0  # it grows
    unchanged = {"app": Target(0.1, 128 * MI, 256 * MI)}  # what it has
    assert plans.plan(replica("d"), unchanged, RULES).rank is None


def _resources(found: dict[str, Any]) -> None:
    found["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "200m"


def _resize_policy(found: dict[str, Any]) -> None:
    policy = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    found["spec"]["containers"][0]["resizePolicy"] = policy


def _plain_init(found: dict[str, Any]) -> None:
    del found["spec"]["initContainers"][0]["restartPolicy"]  # no longer a sidecar


def _pod_level(found: dict[str, Any]) -> None:
    found["spec"]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}


def _name(found: dict[str, Any]) -> None:
    found["spec"]["containers"][0]["name"] = "web"


@pytest.mark.parametrize("change", [_resources, _resize_policy, _plain_init, _pod_level, _name])
def test_a_pod_that_differs_in_what_a_plan_reads_is_planned_for_itself(
    change: Callable[[dict[str, Any]], None],
) -> None:
    plans = Plans()
    shared = plans.plan(replica("a"), TARGETS, RULES).planned
    other = replica("b")
    change(other)
    own = plans.plan(other, TARGETS, RULES).planned
    assert own is not shared
    assert own == checked_plan(other, TARGETS, RULES)


def test_fields_a_plan_does_not_read_do_not_split_replicas() -> None:
    other = replica("b")
    other["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.9"
    other["status"]["phase"] = "Pending"
    assert template(other) == template(replica("a"))


def test_other_targets_or_rules_make_other_plans() -> None:
    plans = Plans()
    shared = plans.plan(replica("a"), TARGETS, RULES).planned
    bigger = {"app": Target(0.6, 300 * MI, 600 * MI)}
    assert plans.plan(replica("b"), bigger, RULES).planned == checked_plan(
        replica("b"), bigger, RULES
    )
    assert plans.plan(replica("b"), bigger, RULES).planned is not shared
    capped = PodRules(
        resource_policy=PodResourcePolicy.model_validate(
            {"containerPolicies": [{"containerName": "*", "maxAllowed": {"cpu": "300m"}}]}
        )
    )
    within = plans.plan(replica("c"), TARGETS, capped).planned
    assert within == checked_plan(replica("c"), TARGETS, capped) != shared
    ranged = PodRules(container_limit_range=LimitRangeItem.model_validate(
        {"type": "Container", "max": {"memory": "200Mi"}}))  # fmt: skip
    assert plans.plan(replica("d"), TARGETS, ranged).planned == checked_plan(
        replica("d"), TARGETS, ranged
    )
    assert (
        plans.plan(replica("e"), TARGETS, ranged).planned
        is plans.plan(replica("f"), TARGETS, ranged).planned
    )


def test_an_unreadable_amount_is_the_error_for_every_replica() -> None:
    broken = replica("a")
    broken["spec"]["containers"][0]["resources"]["limits"]["memory"] = "lots"
    plans = Plans()
    assert isinstance(plans.plan(broken, TARGETS, RULES).planned, QuantityError)
    assert isinstance(plans.plan(copy.deepcopy(broken), TARGETS, RULES).planned, QuantityError)


def test_a_spec_of_unexpected_shape_is_planned_without_the_memo() -> None:
    odd = replica("a")
    odd["spec"] = MappingProxyType(odd["spec"])  # a mapping, not the dict a client decodes
    assert template(odd) is None
    assert Plans().plan(odd, TARGETS, RULES).planned == checked_plan(odd, TARGETS, RULES)


def test_requests_and_limits_refuse_an_unreadable_amount_of_either() -> None:
    bad_limit = container("app", {"cpu": "100m"}, {"cpu": "1", "memory": "many"})
    with pytest.raises(QuantityError):
        requests_of(bad_limit)  # as ContainerResources.of_container refuses it
    bad_request = container("app", {"cpu": "x"}, {"memory": "1Gi"})
    with pytest.raises(QuantityError):
        limits_of(bad_request)
    defaulted = container("app", {"cpu": "100m"}, {"cpu": "1", "memory": "1Gi"})
    assert requests_of(defaulted) == {"cpu": 100, "memory": 2**30}  # the limit stands in
    assert limits_of(defaulted) == {"cpu": 1000, "memory": 2**30}
