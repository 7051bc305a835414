"""The plain pod's plan (`updater.plan_plain`) is the full pipeline's plan: over pods of
every QoS class, with and without limits, restart policies and targets, it gives the
same plan, or the same error, or hands the pod to the full pipeline."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tailor.api.limitrange import LimitRangeItem
from tailor.quantity import QuantityError
from tests.updater.pods import container, pod
from updater.due_targets import Target
from updater.plan import PodRules, ResizePlan, Skipped, plan_resize
from updater.plan_plain import plain_plan

MI = 2**20
REQUESTS = [None, {"cpu": "100m"}, {"cpu": "100m", "memory": "128Mi"}, {"memory": "1G"}]
LIMITS = [None, {"memory": "256Mi"}, {"cpu": "100m", "memory": "128Mi"}, {"cpu": "1500m"}]
TARGETS = [
    Target(0.5, 300 * MI, None),
    Target(0.5, 300 * MI, 600 * MI),
    Target(0.1, 128 * MI, 100 * MI),
    Target(None, 64.5 * MI, None),
    Target(0.00001, None, None),
    Target(2.75, 10**12 + 0.5, 3 * 10**12),
]
RESTART = [{}, {"resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]}]


def _outcome(make: Any, *args: Any) -> ResizePlan | Skipped | str | None:
    try:
        return make(*args)
    except QuantityError as error:
        return f"error: {error}"


def _pods() -> list[dict[str, Any]]:
    made = []
    for requests, limits, extra in itertools.product(REQUESTS, LIMITS, RESTART):
        app = container("app", requests, limits, **extra)
        made.append(pod([app]))
        made.append(pod([app, container("log", {"cpu": "10m"}, {"cpu": "20m"})]))
    return made


def test_plain_plans_equal_the_full_pipeline() -> None:
    plain = 0
    for spec, target in itertools.product(_pods(), TARGETS):
        for targets in ({"app": target}, {"app": target, "log": target}, {"other": target}):
            made = _outcome(plain_plan, spec, targets, PodRules())
            if made is not None:
                plain += 1
                assert made == _outcome(plan_resize, spec, targets, PodRules())
    assert plain > 400  # most of them take the plain path


def test_unreadable_amounts_fail_alike() -> None:
    spec = pod([container("app", {"cpu": "lots"}, {"memory": "256Mi"})])
    targets = {"app": TARGETS[0]}
    assert _outcome(plain_plan, spec, targets) == _outcome(plan_resize, spec, targets)
    assert str(_outcome(plain_plan, spec, targets)).startswith("error: ")


@pytest.mark.parametrize(
    "spec, rules",
    [
        (pod([container("app", {"cpu": "1"})], init=[container("i", {"cpu": "1"})]), None),
        (pod([container("app", {"cpu": "1"}), container("app", {"cpu": "2"})]), None),
        (
            pod([container("app", {"cpu": "1"})]),
            PodRules(pod_limit_range=LimitRangeItem(type="Pod")),
        ),
    ],
)
def test_pods_not_plain_take_the_full_pipeline(
    spec: dict[str, Any], rules: PodRules | None
) -> None:
    assert plain_plan(spec, {"app": TARGETS[0]}, rules) is None
