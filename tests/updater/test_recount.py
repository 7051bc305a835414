"""A resized pod's count derived from its listed count: what a fresh read would give."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.updater.pods import condition, container, container_status, pod
from updater.fit import NodeUsage
from updater.pod_counts import pod_count, recounted
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
