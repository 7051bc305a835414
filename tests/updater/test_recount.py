"""A resized pod's count derived from its listed count: what a fresh read would give."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tailor.quantity import Quantity
from tests.updater.pods import condition, container, container_status, pod
from updater.fit import NodeUsage
from updater.plan import ContainerResize, ResizePlan
from updater.pod_counts import pod_count, recounted, resized_amounts
from updater.resources import Amounts

Obj = dict[str, Any]
GI = 2**30


def listed() -> Obj:
    sidecar = container("proxy", {"cpu": "100m", "memory": "64Mi"}, restartPolicy="Always")
    setup = container("setup", {"cpu": "2", "memory": "1Gi"})
    statuses = [container_status("app", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m"})]
    pending = condition("PodResizePending", "Infeasible", observed=1)
    return pod(
        [container("app", {"cpu": "500m", "memory": "1Gi"}, {"memory": "2Gi"}),
         container("log", limits={"cpu": "200m", "memory": "128Mi"})],
        init=[setup, sidecar], statuses=statuses, conditions=[pending],
    )  # fmt: skip


def _requests(name: str, cpu: str) -> Callable[[Obj], None]:
    def change(answer: Obj) -> None:
        every = answer["spec"]["containers"] + answer["spec"]["initContainers"]
        found = next(c for c in every if c["name"] == name)
        found["resources"]["requests"] = {**found["resources"].get("requests", {}), "cpu": cpu}

    return change


def _generation(answer: Obj) -> None:  # a resize moves it: the pending condition is stale
    answer["metadata"]["generation"] = 2
    _requests("app", "700m")(answer)


def _status(answer: Obj) -> None:
    answer["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = "900m"


def _overhead(answer: Obj) -> None:
    answer["spec"]["overhead"] = {"cpu": "250m"}


def _renamed(answer: Obj) -> None:
    answer["spec"]["containers"][1]["name"] = "logger"


def _pod_level(answer: Obj) -> None:
    answer["spec"]["resources"] = {"requests": {"cpu": "3"}}


Change = Callable[[Obj], None]
DERIVED: list[Change] = [
    _requests("app", "700m"),
    _requests("log", "300m"),
    _requests("proxy", "1"),
    _requests("setup", "3"),
    _generation,
    _pod_level,
]
READ_AFRESH: list[Change] = [_status, _overhead, _renamed]


@pytest.mark.parametrize("change", DERIVED + READ_AFRESH)
def test_a_derived_count_is_the_fresh_count(change: Callable[[Obj], None]) -> None:
    before = listed()
    answer = copy.deepcopy(before)
    change(answer)
    derived = recounted(answer, before, pod_count(before))
    if change in READ_AFRESH:
        assert derived is None
    else:
        assert derived == pod_count(answer)
        assert derived != pod_count(before)


def test_node_usage_recounts_an_answer_from_the_listed_pod() -> None:
    before, neighbour = listed(), pod([container("db", {"cpu": "1", "memory": "1Gi"})], name="db")
    answer = copy.deepcopy(before)
    _generation(answer)
    derived, fresh = NodeUsage([before, neighbour]), NodeUsage([before, neighbour])
    derived.record(answer, before)
    fresh.record(answer)
    assert derived.beside(neighbour) == fresh.beside(neighbour) == Amounts(2000, GI + 192 * 2**20)


def _resize(cpu: str, memory: str, limits: dict[str, str] | None = None) -> ResizePlan:
    asked = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse(memory)}
    held = {r: Quantity.parse(q) for r, q in (limits or {}).items()}
    return ResizePlan((ContainerResize("app", asked, held),))


def _patched(before: Obj, plan: ResizePlan) -> Obj:
    """The API server's answer: the patch merged in by container name, the generation moved."""
    answer = copy.deepcopy(before)
    answer["metadata"]["generation"] = 2
    for sent in plan.patch()["spec"]["containers"]:
        found = next(c for c in answer["spec"]["containers"] if c["name"] == sent["name"])
        for part, amounts in sent["resources"].items():
            found["resources"][part] = {**found["resources"].get(part, {}), **amounts}
    return answer


@pytest.mark.parametrize(
    "plan", [_resize("700m", "1536Mi"), _resize("0.25", "1G", {"memory": "3Gi", "cpu": "1"})]
)
def test_an_answer_as_the_plan_asked_is_counted_from_the_plan(plan: ResizePlan) -> None:
    before = listed()
    answer = _patched(before, plan)
    assert resized_amounts(answer, before, pod_count(before), plan) == pod_count(answer).now


def _defaulted(answer: Obj) -> None:  # something else added a request (a LimitRange, say)
    answer["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "1Gi"


def _limit_moved(answer: Obj) -> None:
    answer["spec"]["containers"][0]["resources"]["limits"]["memory"] = "4Gi"


def _neighbour_moved(answer: Obj) -> None:
    _requests("log", "300m")(answer)


def _still_infeasible(answer: Obj) -> None:
    answer["status"]["conditions"][0]["observedGeneration"] = 2


@pytest.mark.parametrize(
    "change", [_status, _overhead, _renamed, _pod_level, _defaulted, _limit_moved,
               _neighbour_moved, _still_infeasible],
)  # fmt: skip
def test_an_answer_other_than_the_plan_is_recounted(change: Change) -> None:
    before, plan = listed(), _resize("700m", "1536Mi")
    answer = _patched(before, plan)
    change(answer)
    assert resized_amounts(answer, before, pod_count(before), plan) is None
    usage, fresh = NodeUsage([before]), NodeUsage([before])
    usage.record(answer, before, plan)
    fresh.record(answer)
    assert usage.on("node-a") == fresh.on("node-a")


def test_a_request_only_the_limit_stands_in_for_is_recounted() -> None:
    before = listed()
    plan = ResizePlan((ContainerResize("log", {"cpu": Quantity.parse("300m")}, {}),))
    answer = copy.deepcopy(before)
    _requests("log", "300m")(answer)
    assert resized_amounts(answer, before, pod_count(before), plan) is None
