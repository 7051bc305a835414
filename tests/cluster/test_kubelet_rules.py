"""The simulator's kubelet rules as pure functions: sizes, answers, messages, ordering."""

from __future__ import annotations

import pytest

from tests.cluster.kubelet_sim import rules
from tests.cluster.kubelet_sim.quantities import (
    Resources,
    cpu_millis,
    format_cpu,
    format_memory,
    memory_bytes,
)

Mi = 2**20
NODE = rules.NodeLimits(allocatable=Resources(4000, 8192 * Mi), max_pods=110)


def shape(*containers: tuple[int, int], overhead: Resources = rules.NO_RESOURCES) -> rules.PodShape:
    return rules.PodShape(tuple(Resources(c, m) for c, m in containers), overhead=overhead)


@pytest.mark.parametrize(
    ("text", "millis"),
    [("1", 1000), ("1.5", 1500), ("100m", 100), ("0.0001", 1), (2, 2000), (None, 0)],
)
def test_cpu_quantities_round_up_to_millicores(text: object, millis: int) -> None:
    assert cpu_millis(text) == millis


def test_memory_quantities_and_their_canonical_text() -> None:
    assert memory_bytes("128Mi") == 128 * Mi
    assert memory_bytes("1G") == 10**9
    assert format_memory(300 * Mi) == "300Mi"
    assert format_memory(1536 * 1024) == "1536Ki"
    assert format_memory(1_500_000) == "1500000"  # whole bytes, not a 1024 multiple: no suffix
    assert format_memory(1001) == "1001"
    assert format_cpu(2000) == "2"
    assert format_cpu(1500) == "1500m"


def test_pod_requests_follow_the_init_container_and_sidecar_rules() -> None:
    pod = rules.PodShape(
        containers=(Resources(500, 100 * Mi), Resources(250, 50 * Mi)),
        init_containers=(
            rules.InitContainer(Resources(100, 20 * Mi), restartable=True),  # sidecar
            rules.InitContainer(Resources(2000, 10 * Mi)),  # runs beside the sidecar
        ),
        overhead=Resources(50, 5 * Mi),
    )
    # cpu: max(750 + 100, 100 + 2000) + 50; memory: max(150 + 20, 20 + 10) + 5 (Mi)
    assert rules.pod_requests(pod) == Resources(2150, 175 * Mi)


def test_a_resize_above_the_node_allocatable_is_infeasible_with_the_kubelet_message() -> None:
    decision = rules.decide_resize(shape((100_000, 128 * Mi)), [], NODE)
    assert decision.outcome is rules.Outcome.INFEASIBLE
    assert decision.reason == "Infeasible"
    assert decision.message == (
        "Node didn't have enough capacity: cpu, requested: 100000, capacity: 4000"
    )


def test_memory_is_named_first_when_both_resources_exceed_the_node() -> None:
    decision = rules.decide_resize(shape((5000, 9000 * Mi)), [], NODE)
    assert decision.message == (
        f"Node didn't have enough capacity: memory, requested: {9000 * Mi}, capacity: {8192 * Mi}"
    )


def test_pod_overhead_counts_towards_feasibility() -> None:
    fits_alone = shape((3950, Mi))
    assert rules.decide_resize(fits_alone, [], NODE).outcome is rules.Outcome.ACCEPTED
    with_overhead = shape((3950, Mi), overhead=Resources(100, 0))
    assert rules.decide_resize(with_overhead, [], NODE).outcome is rules.Outcome.INFEASIBLE


def test_a_resize_that_fits_the_node_but_not_beside_the_others_is_deferred() -> None:
    others = [Resources(1500, Mi), Resources(1000, Mi)]
    decision = rules.decide_resize(shape((2000, Mi)), others, NODE)
    assert decision.outcome is rules.Outcome.DEFERRED
    assert decision.message == (
        "Node didn't have enough resource: cpu, requested: 2000, used: 2500, capacity: 4000"
    )


def test_a_resize_that_exactly_fills_the_node_is_accepted() -> None:
    decision = rules.decide_resize(shape((1500, Mi)), [Resources(2500, Mi)], NODE)
    assert decision.outcome is rules.Outcome.ACCEPTED


def test_the_pod_count_is_checked_before_cpu() -> None:
    tiny = rules.NodeLimits(Resources(1000, Mi * 100), max_pods=2)
    decision = rules.decide_resize(shape((500, Mi)), [Resources(900, 0)] * 2, tiny)
    assert decision.message == (
        "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
    )


def test_static_cpu_manager_makes_guaranteed_cpu_resizes_infeasible() -> None:
    static = rules.NodeLimits(NODE.allocatable, cpu_manager_static=True)
    cpu_resize = rules.decide_resize(shape((1000, Mi)), [], static, guaranteed=True)
    assert cpu_resize.outcome is rules.Outcome.INFEASIBLE
    assert cpu_resize.message == (
        'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'
    )
    memory_only = rules.decide_resize(
        shape((1000, Mi)), [], static, guaranteed=True, cpu_changes=False
    )
    assert memory_only.outcome is rules.Outcome.ACCEPTED
    burstable = rules.decide_resize(shape((1000, Mi)), [], static, guaranteed=False)
    assert burstable.outcome is rules.Outcome.ACCEPTED


def test_new_pods_that_do_not_fit_are_rejected_with_out_of_cpu() -> None:
    decision = rules.admit_new_pod(Resources(3000, Mi), [Resources(2000, Mi)], NODE)
    assert decision.reason == "OutOfcpu"
    assert decision.message == (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 3000, "
        "used: 2000, capacity: 4000"
    )


def test_deferred_resizes_are_retried_in_the_kubelet_order() -> None:
    pending = [
        rules.PendingResize("old-burstable", increasing=True, pending_since=10.0),
        rules.PendingResize("young-burstable", increasing=True, pending_since=20.0),
        rules.PendingResize("guaranteed", increasing=True, guaranteed=True, pending_since=30.0),
        rules.PendingResize("high-priority", increasing=True, priority=1000, pending_since=40.0),
        rules.PendingResize("unknown-time", increasing=True),
        rules.PendingResize("shrinking", increasing=False, pending_since=50.0),
    ]
    order = [p.key for p in rules.retry_order(pending)]
    assert order == [
        "shrinking",
        "high-priority",
        "guaranteed",
        "old-burstable",
        "young-burstable",
        "unknown-time",
    ]


def test_is_increasing_looks_at_either_resource() -> None:
    assert rules.is_increasing(Resources(1000, 2 * Mi), Resources(2000, Mi))
    assert not rules.is_increasing(Resources(1000, Mi), Resources(1000, Mi))


def test_a_memory_limit_below_usage_fails_actuation_with_the_kubelet_error() -> None:
    change = rules.MemoryLimitChange("app", 512 * Mi, 256 * Mi, usage=300 * Mi)
    assert rules.memory_limit_decrease_error([change]) == (
        "cannot decrease memory limits: ["
        f"attempting to set pod memory limit ({256 * Mi}) below current usage ({300 * Mi}), "
        f'attempting to set container "app" memory limit ({256 * Mi}) below current usage '
        f"({300 * Mi})]"
    )


def test_memory_limit_changes_that_stay_above_usage_are_fine() -> None:
    lower_but_above = rules.MemoryLimitChange("app", 512 * Mi, 400 * Mi, usage=300 * Mi)
    higher = rules.MemoryLimitChange("app", 256 * Mi, 512 * Mi, usage=300 * Mi)
    assert rules.memory_limit_decrease_error([lower_but_above]) is None
    assert rules.memory_limit_decrease_error([higher]) is None


def test_without_limits_on_every_container_only_container_limits_are_checked() -> None:
    changes = [
        rules.MemoryLimitChange("app", 512 * Mi, 256 * Mi, usage=300 * Mi),
        rules.MemoryLimitChange("sidecar", None, None, usage=10 * Mi),
    ]
    message = rules.memory_limit_decrease_error(changes)
    assert message == (
        f'cannot decrease memory limits: attempting to set container "app" memory limit '
        f"({256 * Mi}) below current usage ({310 * Mi})"
    )


def test_memory_pressure_evicts_pods_above_their_requests_first() -> None:
    candidates = [
        rules.EvictionCandidate("within-request", priority=0, memory_usage=100, memory_request=200),
        rules.EvictionCandidate("slightly-over", priority=0, memory_usage=210, memory_request=200),
        rules.EvictionCandidate("far-over", priority=0, memory_usage=900, memory_request=200),
        rules.EvictionCandidate("important", priority=100, memory_usage=900, memory_request=100),
    ]
    order = [c.key for c in rules.eviction_order(candidates)]
    assert order == ["far-over", "slightly-over", "important", "within-request"]


def test_eviction_message_names_the_containers_above_their_requests() -> None:
    message = rules.eviction_message(
        100 * Mi, 50 * Mi, [("app", 600 * Mi, 128 * Mi), ("sidecar", 10 * Mi, 64 * Mi)]
    )
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Container app was using 600Mi, request is 128Mi, has larger consumption of memory. "
    )
