"""Resizes of pods that set pod-level resources (spec.resources): the shared rule's sums,
QoS kept as the API server derives it, container limits within the pod's, node fit."""

from __future__ import annotations

from typing import Any

from tailor.api.vpa import PodResourcePolicy
from tailor.pod_level import Qos, qos_class
from tests.updater.pods import container, node, pod
from updater.due_targets import Target
from updater.fit import effective_requests, node_fit
from updater.plan import PodRules, ResizePlan, Skipped
from updater.pod_plan import plan_pod_resize
from updater.resources import Amounts

MI = 2**20


def pod_level(
    containers: list[dict[str, Any]],
    requests: dict[str, str],
    limits: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    found = pod(containers, **extra)
    found["spec"]["resources"] = {"requests": requests, **({"limits": limits} if limits else {})}
    return found


def ints(values: Any) -> dict[str, int]:
    return {r: q.milli_value() if r == "cpu" else q.int_value() for r, q in values.items()}


SHARING = [container("a"), container("b")]
TARGETS = {"a": Target(0.3, 200 * MI, None), "b": Target(0.1, 100 * MI, None)}


def test_shared_containers_sum_into_the_pod_level_stanza_limits_in_proportion() -> None:
    subject = pod_level(SHARING, {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"})
    plan = plan_pod_resize(subject, TARGETS)
    assert isinstance(plan, ResizePlan) and plan.changes
    assert plan.containers == ()  # containers without their own requests stay without
    assert plan.pod_level is not None
    assert ints(plan.pod_level.requests) == {"cpu": 400, "memory": 300 * MI}
    assert ints(plan.pod_level.limits) == {"cpu": 800, "memory": 600 * MI}
    patch = plan.patch()["spec"]
    assert patch["resources"]["requests"] == {"cpu": "400m", "memory": "300Mi"}
    assert "pod:" in plan.describe()


def test_guaranteed_pod_level_stays_guaranteed() -> None:
    stanza = {"cpu": "1", "memory": "1Gi"}
    subject = pod_level([container("a", requests={"cpu": "100m"})], stanza, dict(stanza))
    assert qos_class(subject) is Qos.GUARANTEED  # container stanzas do not count
    plan = plan_pod_resize(subject, {"a": Target(0.5, 300 * MI, None)})
    assert isinstance(plan, ResizePlan) and plan.pod_level is not None
    assert plan.pod_level.requests == plan.pod_level.limits
    assert ints(plan.pod_level.requests) == {"cpu": 500, "memory": 300 * MI}
    assert ints(plan.containers[0].requests) == {"cpu": 500}  # its own request, sized


def test_container_limit_lowered_to_the_pod_level_limit() -> None:
    own = container("a", requests={"cpu": "100m"}, limits={"cpu": "200m"})
    stanza = {"cpu": "1", "memory": "1Gi"}
    subject = pod_level([own, container("b")], stanza, dict(stanza))
    targets = {"a": Target(0.5, 100 * MI, None), "b": Target(0.1, 100 * MI, None)}
    plan = plan_pod_resize(subject, targets)
    assert isinstance(plan, ResizePlan) and plan.pod_level is not None
    assert ints(plan.pod_level.limits)["cpu"] == 600
    (resize,) = plan.containers
    assert ints(resize.requests) == {"cpu": 500}
    assert ints(resize.limits) == {"cpu": 600}  # 1000m in proportion, capped at the pod's
    assert any("lowered to the pod-level limit" in note for note in plan.notes)


def test_a_container_without_target_leaves_the_pod_level_amount_with_a_note() -> None:
    subject = pod_level(SHARING, {"cpu": "1", "memory": "1Gi"})
    plan = plan_pod_resize(subject, {"a": Target(0.3, 200 * MI, None)})
    assert isinstance(plan, ResizePlan) and not plan.changes
    assert any("no cpu target for b" in note for note in plan.notes)


def test_requests_only_keeps_pod_level_limits_and_caps_the_request() -> None:
    policy = PodResourcePolicy.model_validate(
        {"containerPolicies": [{"containerName": "*", "controlledValues": "RequestsOnly"}]}
    )
    subject = pod_level(
        SHARING, {"cpu": "100m", "memory": "100Mi"}, {"cpu": "300m", "memory": "1Gi"}
    )
    plan = plan_pod_resize(subject, TARGETS, PodRules(resource_policy=policy))
    assert isinstance(plan, ResizePlan) and plan.pod_level is not None
    assert ints(plan.pod_level.limits) == {"cpu": 300, "memory": 1024 * MI}
    assert ints(plan.pod_level.requests) == {"cpu": 300, "memory": 300 * MI}
    assert "pod-level cpu request capped to the pod-level limit" in plan.notes


def test_a_plan_that_would_change_the_pod_level_class_is_skipped() -> None:
    policy = PodResourcePolicy.model_validate(
        {"containerPolicies": [{"containerName": "*", "controlledValues": "RequestsOnly"}]}
    )
    stanza = {"cpu": "1", "memory": "100Mi"}
    subject = pod_level(SHARING, stanza, {"cpu": "1", "memory": "300Mi"})
    assert qos_class(subject) is Qos.BURSTABLE
    targets = {"a": Target(0.5, 400 * MI, None), "b": Target(0.5, 100 * MI, None)}
    plan = plan_pod_resize(subject, targets, PodRules(resource_policy=policy))
    # memory capped at its limit would equal it, cpu already does: Guaranteed, refused (422)
    assert plan == Skipped("the scheduled amounts would make a Burstable pod Guaranteed")


def test_node_fit_counts_pod_level_requests_and_the_allocated_ones() -> None:
    subject = pod_level(SHARING, {"cpu": "1", "memory": "1Gi"}, overhead={"cpu": "100m"})
    assert effective_requests(subject) == Amounts(1100, 1024 * MI)
    subject["status"]["allocatedResources"] = {"cpu": "2", "memory": "512Mi"}
    assert effective_requests(subject) == Amounts(2100, 1024 * MI)
    plan = plan_pod_resize(subject, {"a": Target(2.0, 100 * MI, None), "b": Target(1.5, MI, None)})
    assert isinstance(plan, ResizePlan)
    fit = node_fit(subject, plan, node(cpu="3"), [subject])
    assert not fit.fits and fit.never and "cpu needs 3600" in fit.reason


def test_own_requests_growing_past_a_stanza_left_as_is_raise_it() -> None:
    own = container("a", requests={"cpu": "200m"})
    subject = pod_level([own, container("b")], {"cpu": "300m"})
    plan = plan_pod_resize(subject, {"a": Target(0.5, None, None)})  # none for b
    assert isinstance(plan, ResizePlan) and plan.pod_level is not None
    assert ints(plan.containers[0].requests) == {"cpu": 500}
    assert ints(plan.pod_level.requests) == {"cpu": 500}  # the API wants the aggregate covered
    assert "pod-level cpu request raised to the containers' own requests" in plan.notes
