"""Would an evicted pod's larger replacement land on some node? (the scheduler's view)"""

from __future__ import annotations

from typing import Any

from tests.updater.pods import container, pod
from updater.due_targets import Target
from updater.fit import NodeUsage
from updater.plan import ResizePlan, plan_resize
from updater.replacement import eviction_landing, untolerated_taint, where_it_lands

MI = 2**20


def node(name: str, cpu: str, memory: str, **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": memory}},
    }


def web(**spec: Any) -> dict[str, Any]:
    found = pod([container("app", requests={"cpu": "500m", "memory": "256Mi"})])
    found["metadata"]["uid"] = "web"
    found["spec"].update({"nodeName": "a", **spec})
    return found


def grown(found: dict[str, Any], cpu: float) -> ResizePlan:
    plan = plan_resize(found, {"app": Target(cpu, 256 * MI, None)})
    assert isinstance(plan, ResizePlan) and plan.changes
    return plan


def test_the_replacement_lands_where_the_pods_own_room_frees_up() -> None:
    found = web()
    nodes = {"a": node("a", "2", "4Gi")}
    usage = NodeUsage([found])
    landing = where_it_lands(found, grown(found, 1.8), nodes, usage)
    assert landing.fits and landing.node == "a"  # its own 500m no longer counted


def test_no_node_with_room_selector_and_tolerated_taints_means_no_eviction() -> None:
    found = web(nodeSelector={"pool": "big"})
    other = {**web(), "metadata": {"name": "other", "uid": "other", "namespace": "x"}}
    nodes = {
        "a": node("a", "2", "4Gi", labels={"pool": "big"}),
        "b": node("b", "8", "16Gi", labels={"pool": "small"}),
        "c": node("c", "8", "16Gi", labels={"pool": "big"}, taints=[
            {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
        ]),
        "d": node("d", "8", "16Gi", labels={"pool": "big"}, unschedulable=True),
    }  # fmt: skip
    usage = NodeUsage([found, other])  # `other` takes 500m more of a
    reason = eviction_landing(found, grown(found, 1.8), nodes, usage)
    assert reason is not None and reason.startswith("the replacement (cpu 1800m")
    assert "a: cpu 1500 free" in reason
    assert "b: does not match nodeSelector pool=big" in reason
    assert "c: taint gpu=yes:NoSchedule not tolerated" in reason
    assert "d: unschedulable" in reason
    tolerant = web(
        nodeSelector={"pool": "big"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )
    assert eviction_landing(tolerant, grown(tolerant, 1.8), nodes, usage) is None  # on c


def test_a_smaller_replacement_is_never_held_back() -> None:
    found = web()
    assert eviction_landing(found, grown(found, 0.25), {}, NodeUsage([found])) is None


def test_tolerations_match_as_the_api_server_matches_them() -> None:
    taint = node("n", "1", "1Gi", taints=[{"key": "k", "value": "v", "effect": "NoExecute"}])
    prefer = node("n", "1", "1Gi", taints=[{"key": "k", "effect": "PreferNoSchedule"}])
    assert untolerated_taint(web(), taint) == "k=v:NoExecute"
    assert untolerated_taint(web(), prefer) is None  # only a preference
    everything = web(tolerations=[{"operator": "Exists"}])
    assert untolerated_taint(everything, taint) is None
    wrong_value = web(tolerations=[{"key": "k", "operator": "Equal", "value": "w"}])
    assert untolerated_taint(wrong_value, taint) == "k=v:NoExecute"
