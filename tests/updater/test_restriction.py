"""Upstream's eviction restriction: small groups are never evicted from, large ones lose at
most their tolerance per pass (pure, on hand-made pods)."""

from __future__ import annotations

import pytest

from tailor.api.vpa import EvictionRequirement
from updater.due_targets import Target
from updater.resources import Json
from updater.restriction import (
    DisruptionLimits,
    EvictionRestriction,
    configured_replicas,
    owner_of,
    unmet_eviction_requirements,
)


def pod(
    name: str, owner: str | None = "web-1", phase: str = "Running", kind: str = "ReplicaSet"
) -> Json:
    metadata: dict[str, object] = {"name": name, "namespace": "shop"}
    if owner is not None:
        metadata["ownerReferences"] = [{"kind": kind, "name": owner, "controller": True}]
    return {"metadata": metadata, "status": {"phase": phase}}


def replica_sets(**replicas: int) -> dict[tuple[str, str], Json]:
    return {
        ("shop", name.replace("_", "-")): {"spec": {"replicas": n}} for name, n in replicas.items()
    }


def restriction(
    pods: list[Json], limits: DisruptionLimits | None = None, **replicas: int
) -> EvictionRestriction:
    configured = configured_replicas({"ReplicaSet": replica_sets(**replicas)})
    return EvictionRestriction(pods, configured, limits or DisruptionLimits())


def evict_in_turn(rule: EvictionRestriction, pods: list[Json]) -> list[str | None]:
    refusals = []
    for each in pods:
        refusal = rule.refusal(each)
        if refusal is None:
            rule.record(each)
        refusals.append(refusal)
    return refusals


def test_a_single_replica_is_never_evicted_unless_min_replicas_allows() -> None:
    alone = [pod("a")]
    refusal = restriction(alone, web_1=1).refusal(alone[0])
    assert refusal == "ReplicaSet web-1 has 1 live replica(s), fewer than min replicas 2"
    assert restriction(alone, DisruptionLimits(min_replicas=1), web_1=1).refusal(alone[0]) is None
    assert restriction(alone, web_1=1).refusal(alone[0], min_replicas=1) is None  # the VPA's


def test_one_pass_evicts_at_most_the_tolerance_of_a_group() -> None:
    four = [pod(f"p{i}") for i in range(4)]
    refusals = evict_in_turn(restriction(four, web_1=4), four)
    assert [r is None for r in refusals] == [True, True, False, False]  # int(4 x 0.5) = 2
    assert (
        refusals[2]
        == "ReplicaSet web-1: 2 of 4 replicas already evicted this pass (eviction tolerance 0.5)"
    )


def test_a_group_small_enough_to_round_to_none_still_loses_one_when_whole() -> None:
    three = [pod(f"p{i}") for i in range(3)]
    none_tolerated = DisruptionLimits(tolerance=0.2)  # int(3 x 0.2) = 0
    refusals = evict_in_turn(restriction(three, none_tolerated, web_1=3), three)
    assert [r is None for r in refusals] == [True, False, False]


def test_a_group_already_short_of_replicas_is_left_alone() -> None:
    two_of_three = [pod("p0"), pod("p1"), pod("p2", phase="Failed")]
    rule = restriction(two_of_three, DisruptionLimits(tolerance=0.2), web_1=3)
    assert rule.refusal(two_of_three[0]) == "ReplicaSet web-1 has 2 of 3 replicas running"


def test_groups_are_counted_apart_and_a_bare_pod_is_never_evicted() -> None:
    mixed = [pod("a0"), pod("a1"), pod("b0", owner="api-1"), pod("b1", owner="api-1")]
    assert evict_in_turn(restriction(mixed, web_1=2, api_1=2), mixed) == [
        None,
        "ReplicaSet web-1: 1 of 2 replicas already evicted this pass (eviction tolerance 0.5)",
        None,
        "ReplicaSet api-1: 1 of 2 replicas already evicted this pass (eviction tolerance 0.5)",
    ]
    bare = pod("x", owner=None)
    assert owner_of(bare) is None
    assert restriction([bare]).refusal(bare) == "no controller would replace it"


@pytest.mark.parametrize(("minimum", "tolerance"), [(0, 0.5), (2, -0.1), (2, 1.5)])
def test_impossible_limits_are_refused(minimum: int, tolerance: float) -> None:
    with pytest.raises(ValueError):
        DisruptionLimits(minimum, tolerance)


def requirement(direction: str, *resources: str) -> EvictionRequirement:
    return EvictionRequirement.model_validate(
        {"resources": list(resources), "changeRequirement": direction}
    )


def running(spec_cpu: str, running_cpu: str | None = None) -> Json:
    container = {"name": "app", "resources": {"requests": {"cpu": spec_cpu, "memory": "1Gi"}}}
    status: dict[str, object] = {}
    if running_cpu is not None:  # the kubelet's report: what the container runs with
        reported = {"requests": {"cpu": running_cpu, "memory": "1Gi"}}
        status["containerStatuses"] = [{"name": "app", "resources": reported}]
    return {"spec": {"containers": [container]}, "status": status}


def test_eviction_requirements_compare_the_target_with_what_the_container_runs_with() -> None:
    up = [requirement("TargetHigherThanRequests", "cpu")]
    down = [requirement("TargetLowerThanRequests", "cpu")]
    target = {"app": Target(2.0, 2.0**30, None)}
    refused_resize = running("2", "1")  # the spec asks for 2 cores, the container still has 1
    assert unmet_eviction_requirements(refused_resize, target, up) is None
    assert unmet_eviction_requirements(refused_resize, target, down) == (
        "its VPA's evictionRequirements are not met (cpu TargetLowerThanRequests)"
    )
    assert unmet_eviction_requirements(running("1"), target, up) is None  # no report: the spec
    assert unmet_eviction_requirements(running("1"), target, []) is None


def test_every_listed_resource_must_move_the_required_way() -> None:
    both_up = [requirement("TargetHigherThanRequests", "cpu", "memory")]
    more_cpu_same_memory = {"app": Target(2.0, 2.0**30, None)}
    assert unmet_eviction_requirements(running("1", "1"), more_cpu_same_memory, both_up)
    more_of_both = {"app": Target(2.0, 2.0**31, None)}
    assert unmet_eviction_requirements(running("1", "1"), more_of_both, both_up) is None


def test_a_statefulset_or_daemonset_counts_its_configured_size_not_its_live_pods() -> None:
    """Upstream reads spec.replicas (a DaemonSet: its ready pods): a degraded group is
    not evicted from further."""
    two_of_three = [pod(f"db-{i}", "db", kind="StatefulSet") for i in range(2)]
    groups = {
        "StatefulSet": {("shop", "db"): {"spec": {"replicas": 3}}},
        "DaemonSet": {("shop", "agent"): {"status": {"numberReady": 3}}},
    }
    configured = configured_replicas(groups)
    assert configured == {("shop", "StatefulSet", "db"): 3, ("shop", "DaemonSet", "agent"): 3}
    rule = EvictionRestriction(two_of_three, configured, DisruptionLimits())
    assert rule.refusal(two_of_three[0]) is not None
    unknown = EvictionRestriction(two_of_three, {}, DisruptionLimits())  # live pods only
    assert unknown.refusal(two_of_three[0]) is None
    agents = [pod(f"agent-{i}", "agent", kind="DaemonSet") for i in range(2)]
    assert EvictionRestriction(agents, configured, DisruptionLimits()).refusal(agents[0])
