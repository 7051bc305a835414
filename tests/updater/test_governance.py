"""What a pod's VPA and LimitRanges allow the updater: pure, on hand-made objects."""

from __future__ import annotations

from typing import Any

import pytest

from tailor.api.limitrange import LimitRange
from tailor.api.meta import ResourceList
from tailor.api.vpa import VerticalPodAutoscaler
from updater.governance import limit_rules, vpa_governance
from updater.plan import PodRules

OWNER: dict[str, Any] = {"apiVersion": "apps/v1", "uid": "u", "controller": True}
REPLICA_SETS = {
    ("shop", "web-5d8f7c9b6d"): {
        "metadata": {"ownerReferences": [{**OWNER, "kind": "Deployment", "name": "web"}]}
    }
}


def pod(**owner: str) -> dict[str, Any]:
    reference = {**OWNER, "kind": "ReplicaSet", "name": "web-5d8f7c9b6d", **owner}
    return {"metadata": {"name": "web-x", "namespace": "shop", "ownerReferences": [reference]}}


def vpa(mode: str | None, name: str = "web", **spec: Any) -> VerticalPodAutoscaler:
    policy = {"updatePolicy": {"updateMode": mode}} if mode else {}
    return VerticalPodAutoscaler.from_api(
        {
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                **policy,
                **spec,
            },
        }
    )


@pytest.mark.parametrize(("mode", "may_evict"), [("InPlace", False), ("InPlaceOrRecreate", True)])
def test_in_place_modes_are_followed_and_only_one_allows_eviction(
    mode: str, may_evict: bool
) -> None:
    policy = {"containerPolicies": [{"containerName": "*", "maxAllowed": {"cpu": "1"}}]}
    found = vpa_governance(pod(), [vpa(mode, resourcePolicy=policy)], REPLICA_SETS, PodRules())
    assert found.leave_alone is None
    assert found.may_evict is may_evict
    assert found.rules.resource_policy is not None
    [entry] = found.rules.resource_policy.container_policies or []
    assert entry.max_allowed == ResourceList(cpu="1")


@pytest.mark.parametrize(
    ("mode", "shown"),
    [("Off", "Off"), ("Initial", "Initial"), ("Recreate", "Recreate"), ("Auto", "Recreate"),
     (None, "Recreate")],
)  # fmt: skip
def test_other_modes_leave_the_pod_alone_and_say_so(mode: str | None, shown: str) -> None:
    found = vpa_governance(pod(), [vpa(mode)], REPLICA_SETS, PodRules())
    assert found.leave_alone == f"VPA web has updateMode {shown}: no in-place updates"


def test_a_pod_without_a_vpa_or_with_a_vpa_of_another_target_is_left_alone() -> None:
    assert vpa_governance(pod(), [], REPLICA_SETS, PodRules()).leave_alone == (
        "no VerticalPodAutoscaler controls it"
    )
    unknown_rs = vpa_governance(pod(name="other-5d8f7c9b6d"), [vpa("InPlace")], {}, PodRules())
    assert unknown_rs.leave_alone == "no VerticalPodAutoscaler controls it"


def test_two_controllers_are_unreadable_owner_references() -> None:
    twice = pod()
    twice["metadata"]["ownerReferences"].append({**OWNER, "kind": "StatefulSet", "name": "db"})
    found = vpa_governance(twice, [vpa("InPlace")], REPLICA_SETS, PodRules())
    assert found.leave_alone is not None
    assert found.leave_alone.startswith("unreadable owner references: more than one owner")


def test_the_oldest_vpa_decides() -> None:
    old = vpa("Off", name="old")  # no creationTimestamp: Go's zero time, the oldest
    young = VerticalPodAutoscaler.from_api(
        {**vpa("InPlace", name="young").to_api(),
         "metadata": {"name": "young", "namespace": "shop",
                      "creationTimestamp": "2026-01-01T00:00:00Z"}}
    )  # fmt: skip
    found = vpa_governance(pod(), [young, old], REPLICA_SETS, PodRules())
    assert found.leave_alone == "VPA old has updateMode Off: no in-place updates"


def test_limit_ranges_merge_per_type_and_reach_the_vpas_rules() -> None:
    ranges = [
        LimitRange.from_api(
            {
                "metadata": {"name": n, "namespace": "shop"},
                "spec": {"limits": [{"type": "Container", "max": {"memory": m}}]},
            }
        )
        for n, m in (("a", "1Gi"), ("b", "512Mi"))
    ]
    pod_range = LimitRange.from_api(
        {"metadata": {"name": "p", "namespace": "shop"},
         "spec": {"limits": [{"type": "Pod", "max": {"cpu": "4"}}]}}
    )  # fmt: skip
    rules = limit_rules([*ranges, pod_range])
    assert rules.container_limit_range is not None and rules.pod_limit_range is not None
    assert rules.container_limit_range.max == ResourceList(memory="512Mi")  # the tighter
    assert rules.pod_limit_range.max == ResourceList(cpu="4")
    assert limit_rules([]) == PodRules()
    governed = vpa_governance(pod(), [vpa("InPlace")], REPLICA_SETS, rules)
    assert governed.rules.container_limit_range == rules.container_limit_range


def test_the_vpas_min_replicas_overrides_the_updaters_flag() -> None:
    own = VerticalPodAutoscaler.from_api(
        {**vpa("InPlaceOrRecreate").to_api(), "spec": {
            **vpa("InPlaceOrRecreate").to_api()["spec"],
            "updatePolicy": {"updateMode": "InPlaceOrRecreate", "minReplicas": 1},
        }}
    )  # fmt: skip
    assert vpa_governance(pod(), [own], REPLICA_SETS, PodRules()).min_replicas == 1
    plain = vpa_governance(pod(), [vpa("InPlaceOrRecreate")], REPLICA_SETS, PodRules())
    assert plain.min_replicas is None  # --min-replicas then


@pytest.mark.parametrize(
    ("mode", "recreate", "left"),
    [("Recreate", True, None), ("Auto", True, None), (None, True, None),
     ("Off", False, "VPA web has updateMode Off: no in-place updates"),
     ("InPlace", False, None)],
)  # fmt: skip
def test_following_recommendations_governs_recreate_pods_for_eviction(
    mode: str | None, recreate: bool, left: str | None
) -> None:
    found = vpa_governance(pod(), [vpa(mode)], REPLICA_SETS, PodRules(), recreate=True)
    assert (found.recreate, found.leave_alone) == (recreate, left)
    if recreate:
        assert found.may_evict


def cpu_hpa(container: str | None = None) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": 70}
    metric: dict[str, Any] = {"type": "Resource", "resource": {"name": "cpu", "target": target}}
    if container is not None:
        source = {"name": "cpu", "container": container, "target": target}
        metric = {"type": "ContainerResource", "containerResource": source}
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    return {
        "metadata": {"name": "web-hpa", "namespace": "shop"},
        "spec": {"scaleTargetRef": ref, "maxReplicas": 4, "metrics": [metric]},
    }


def test_an_hpa_on_cpu_leaves_cpu_to_it_and_says_so() -> None:
    with_containers = {**pod(), "spec": {"containers": [{"name": "app"}, {"name": "envoy"}]}}
    found = vpa_governance(
        with_containers, [vpa("InPlace")], REPLICA_SETS, PodRules(), hpas=[cpu_hpa("envoy")]
    )
    assert found.leave_alone is None
    assert (found.contested("envoy"), found.contested("app")) == ({"cpu"}, frozenset())
    assert found.hpa_note == (
        "left to the HPA (--allow-hpa-conflicts resizes them): "
        "HPA web-hpa scales on container envoy's cpu (ContainerResource metric)"
    )
    whole_pod = vpa_governance(pod(), [vpa("InPlace")], REPLICA_SETS, PodRules(), hpas=[cpu_hpa()])
    assert whole_pod.contested("app") == {"cpu"}
    unchecked = vpa_governance(pod(), [vpa("InPlace")], REPLICA_SETS, PodRules(), hpas=None)
    assert unchecked.conflicts == () and unchecked.hpa_note == ""
