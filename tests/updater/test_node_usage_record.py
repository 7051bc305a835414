"""A resized pod is counted as the API server answered, in place of its listed count."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tailor.quantity import Quantity
from tests.updater.pods import condition, container, container_status, pod
from updater.fit import NodeUsage
from updater.plan import ContainerResize, ResizePlan
from updater.pod_counts import pod_count
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


ANSWERS: list[Change] = [*DERIVED, *READ_AFRESH]


@pytest.mark.parametrize("change", ANSWERS)
def test_an_answer_replaces_the_listed_count(change: Change) -> None:
    before, neighbour = listed(), pod([container("db", {"cpu": "1", "memory": "1Gi"})], name="db")
    answer = copy.deepcopy(before)
    change(answer)
    usage = NodeUsage([before, neighbour])
    usage.record(answer)
    assert usage.on("node-a") == pod_count(answer).now + pod_count(neighbour).now
    assert usage.beside(neighbour) == pod_count(answer).now  # replaced, not added


def test_node_usage_recounts_an_answer_from_the_listed_pod() -> None:
    before, neighbour = listed(), pod([container("db", {"cpu": "1", "memory": "1Gi"})], name="db")
    answer = copy.deepcopy(before)
    _generation(answer)
    usage = NodeUsage([before, neighbour])
    usage.record(answer)
    assert usage.beside(neighbour) == Amounts(2000, GI + 192 * 2**20)


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
def test_an_answer_as_the_plan_asked_counts_the_plan(plan: ResizePlan) -> None:
    before = listed()
    usage = NodeUsage([before])
    usage.record(_patched(before, plan))
    assert usage.on("node-a") == pod_count(before).effective(plan)


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
def test_an_answer_other_than_the_plan_counts_as_answered(change: Change) -> None:
    before, plan = listed(), _resize("700m", "1536Mi")
    answer = _patched(before, plan)
    change(answer)
    usage = NodeUsage([before])
    usage.record(answer)
    assert usage.on("node-a") == pod_count(answer).now
