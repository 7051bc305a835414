"""Node fit as the scheduler counts it: the three-way max, init rules, overhead, other pods."""

from __future__ import annotations

from typing import Any

import pytest

from tailor.api.meta import ResourceList
from tests.updater.pods import condition, container, container_status, node, pod
from updater.fit import Fit, NodeUsage, effective_requests, node_fit
from updater.plan import ContainerResize, ResizePlan
from updater.resources import Amounts

MI = 2**20
GI = 2**30


def one(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return container(name, requests={"cpu": cpu, "memory": memory})


def grow(name: str, cpu: int, memory: int) -> ResizePlan:
    requests = ResourceList({"cpu": f"{cpu}m", "memory": memory})
    return ResizePlan((ContainerResize(name, requests, {}),))


INFEASIBLE = condition("PodResizePending", "Infeasible", observed=2)


@pytest.mark.parametrize(
    ("spec", "applied", "allocated", "expected"),
    [
        ("500m", "300m", "400m", 500),  # the spec is the largest (a resize asked for)
        ("500m", "700m", "400m", 700),  # applied is the largest (shrinking, not yet applied)
        ("500m", "300m", "900m", 900),  # allocated is the largest (admitted, not yet applied)
    ],
)
def test_each_container_counts_the_largest_of_spec_applied_and_allocated(
    spec: str, applied: str, allocated: str, expected: int
) -> None:
    target = pod(
        [one("app", spec, "1Gi")],
        statuses=[container_status("app", {"cpu": applied, "memory": "2Gi"}, {"cpu": allocated})],
    )
    assert effective_requests(target) == Amounts(expected, 2 * GI)


def test_a_container_without_status_counts_its_spec() -> None:
    target = pod([one("app", "250m", "64Mi"), one("new", "1", "1Gi")])
    assert effective_requests(target) == Amounts(1250, 64 * MI + GI)


def test_limits_stand_in_for_missing_requests() -> None:
    target = pod([container("app", limits={"cpu": "2", "memory": "1Gi"})])
    assert effective_requests(target) == Amounts(2000, GI)


def test_an_infeasible_resize_drops_the_spec_term() -> None:
    statuses = [
        container_status("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})
    ]
    containers = [one("app", "8", "64Gi")]
    infeasible = pod(containers, statuses=statuses, conditions=[INFEASIBLE], generation=2)
    assert effective_requests(infeasible) == Amounts(1000, GI)
    deferred = condition("PodResizePending", "Deferred", observed=2)
    waiting = pod(containers, statuses=statuses, conditions=[deferred], generation=2)
    assert effective_requests(waiting) == Amounts(8000, 64 * GI)


def test_a_stale_infeasible_condition_keeps_the_spec_term() -> None:
    statuses = [
        container_status("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})
    ]
    stale = pod([one("app", "2", "2Gi")], statuses=statuses, conditions=[INFEASIBLE], generation=3)
    assert effective_requests(stale) == Amounts(2000, 2 * GI)


def test_a_plan_replaces_the_spec_of_its_containers_only() -> None:
    target = pod(
        [one("app", "1", "1Gi"), one("envoy", "100m", "64Mi")],
        statuses=[
            container_status("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
            container_status("envoy", {"cpu": "100m", "memory": "64Mi"}),
        ],
    )
    bigger = effective_requests(target, grow("app", 3000, 3 * GI))
    assert bigger == Amounts(3100, 3 * GI + 64 * MI)
    # Shrinking: the old size stays allocated and applied until the kubelet acts.
    smaller = effective_requests(target, grow("app", 200, 128 * MI))
    assert smaller == Amounts(1100, GI + 64 * MI)


def test_a_plan_on_an_infeasible_pod_counts_the_new_request() -> None:
    statuses = [
        container_status("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})
    ]
    target = pod([one("app", "8", "1Gi")], statuses=statuses, conditions=[INFEASIBLE], generation=2)
    assert effective_requests(target, grow("app", 2000, GI)) == Amounts(2000, GI)


def always(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return container(name, requests={"cpu": cpu, "memory": memory}, restartPolicy="Always")


def test_sidecars_add_to_the_app_containers() -> None:
    target = pod([one("app", "200m", "256Mi")], init=[always("proxy", "100m", "64Mi")])
    assert effective_requests(target) == Amounts(300, 320 * MI)


def test_plain_init_containers_count_as_a_maximum() -> None:
    small = pod([one("app", "500m", "1Gi")], init=[one("migrate", "200m", "2Gi")])
    assert effective_requests(small) == Amounts(500, 2 * GI)
    two = pod(
        [one("app", "100m", "64Mi")],
        init=[one("fetch", "1", "32Mi"), one("migrate", "300m", "512Mi")],
    )
    assert effective_requests(two) == Amounts(1000, 512 * MI)


def test_a_plain_init_container_runs_beside_the_sidecars_started_before_it() -> None:
    # KEP-753: InitContainerUse(i) = sum(sidecars with index < i) + init container i.
    init = [
        always("proxy", "100m", "64Mi"),
        one("migrate", "1", "1Gi"),
        always("log", "50m", "16Mi"),
    ]
    target = pod([one("app", "200m", "256Mi")], init=init)
    assert effective_requests(target) == Amounts(1100, GI + 64 * MI)


def test_a_resized_sidecar_counts_its_status_too() -> None:
    status = container_status("proxy", {"cpu": "500m", "memory": "64Mi"}, {"cpu": "500m"})
    target = pod([one("app", "200m", "256Mi")], init=[always("proxy", "100m", "64Mi")])
    target["status"]["initContainerStatuses"] = [status]
    assert effective_requests(target) == Amounts(700, 320 * MI)


def test_a_planned_sidecar_resize_replaces_its_spec_and_counts_under_later_init_containers() -> (
    None
):
    init = [always("proxy", "100m", "64Mi"), one("migrate", "1", "1Gi")]
    target = pod([one("app", "200m", "256Mi")], init=init)
    plan = ResizePlan(
        (ContainerResize("proxy", ResourceList({"cpu": "900m", "memory": "64Mi"}), {}, True),)
    )
    # running: 200m + 900m; migrate ran beside the proxy: 900m + 1 core
    assert effective_requests(target, plan) == Amounts(1900, GI + 64 * MI)
    shrink = ResizePlan(
        (ContainerResize("proxy", ResourceList({"cpu": "50m", "memory": "64Mi"}), {}, True),)
    )
    assert effective_requests(target, shrink) == Amounts(1050, GI + 64 * MI)


def test_overhead_is_added_once() -> None:
    target = pod(
        [one("app", "200m", "256Mi"), one("b", "100m", "64Mi")],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    assert effective_requests(target) == Amounts(550, 440 * MI)


def resident(name: str, cpu: str, memory: str, **kwargs: Any) -> dict[str, Any]:
    return pod([one("app", cpu, memory)], name=name, **kwargs)


def test_fits_exactly_the_free_room() -> None:
    target = resident("web-1", "500m", "1Gi")
    others = [target, resident("db-1", "2", "4Gi"), resident("cache-1", "500m", "1Gi")]
    assert node_fit(target, grow("app", 1500, 3 * GI), node(), others) == Fit(True)


def test_one_millicore_too_many_does_not_fit_and_names_cpu() -> None:
    target = resident("web-1", "500m", "1Gi")
    others = [resident("db-1", "2", "4Gi"), resident("cache-1", "500m", "1Gi")]
    fit = node_fit(target, grow("app", 1501, 3 * GI), node(), others)
    assert not fit.fits
    assert fit.reason == (
        "does not fit node node-a: cpu needs 1501, 1500 free (cpu in millicores, memory in bytes)"
    )


def test_short_memory_and_both_are_named() -> None:
    target = resident("web-1", "500m", "1Gi")
    others = [resident("db-1", "2", "4Gi")]
    memory = node_fit(target, grow("app", 500, 4 * GI + 1), node(), others)
    assert not memory.fits
    assert f"memory needs {4 * GI + 1}, {4 * GI} free" in memory.reason
    assert "cpu needs" not in memory.reason
    both = node_fit(target, grow("app", 3000, 5 * GI), node(), others)
    assert "cpu needs 3000, 2000 free; memory needs" in both.reason


def test_a_resource_that_does_not_grow_fits_on_an_overcommitted_node() -> None:
    """A neighbour's pending growth may have the node over-counted: a shrink frees room."""
    running = [container_status("app", requests={"cpu": "2"}, allocated={"cpu": "2"})]
    target = resident("web-1", "2", "1Gi", statuses=running)
    pending = resident(
        "db-1", "3", "1Gi", statuses=[container_status("app", allocated={"cpu": "2"})]
    )  # counted at 3, its spec, while the kubelet holds 2: 5 of 4 cores counted
    assert node_fit(target, grow("app", 1000, GI), node(), [pending]) == Fit(True)
    assert node_fit(target, grow("app", 2000, GI), node(), [pending]) == Fit(True)
    fit = node_fit(target, grow("app", 1000, 2 * GI), node(), [pending])  # memory grows
    assert fit.fits  # 2 GiB of memory fits; cpu shrinks
    assert not node_fit(target, grow("app", 2001, GI), node(), [pending]).fits


def test_no_room_at_all_reports_zero_free() -> None:
    target = resident("web-1", "500m", "1Gi")
    fit = node_fit(target, grow("app", 600, GI), node(), [resident("hog", "5", "1Gi")])
    assert "cpu needs 600, 0 free" in fit.reason


@pytest.mark.parametrize(
    ("phase", "counted"),
    [("Succeeded", False), ("Failed", False), ("Pending", True), ("Running", True)],
)
def test_finished_pods_do_not_hold_room(phase: str, counted: bool) -> None:
    target = resident("web-1", "500m", "1Gi")
    job = resident("job-1", "3", "1Gi", phase=phase)
    assert node_fit(target, grow("app", 2000, GI), node(), [job]).fits is not counted


def test_the_pod_itself_is_not_counted_twice() -> None:
    target = resident("web-1", "2", "1Gi")
    # Its old size in the node's list must not be added to the new one.
    assert node_fit(target, grow("app", 4000, GI), node(), [target]).fits
    twin = resident("web-1", "2", "1Gi", uid="another-uid")  # same name, another pod
    assert not node_fit(target, grow("app", 4000, GI), node(), [target, twin]).fits


def test_other_pods_count_at_their_allocated_size() -> None:
    target = resident("web-1", "500m", "1Gi")
    shrinking = resident(
        "db-1", "500m", "1Gi", statuses=[container_status("app", allocated={"cpu": "3"})]
    )
    assert not node_fit(target, grow("app", 1500, GI), node(), [shrinking]).fits
    assert node_fit(target, grow("app", 1000, GI), node(), [shrinking]).fits


def test_other_pods_count_their_overhead() -> None:
    target = resident("web-1", "500m", "1Gi")
    kata = pod([one("app", "1", "1Gi")], name="kata-1", overhead={"cpu": "1"})
    assert node_fit(target, grow("app", 2000, GI), node(), [kata]).fits
    assert not node_fit(target, grow("app", 2001, GI), node(), [kata]).fits


def test_node_usage_counts_each_live_pod_once_and_recounts_a_resized_one() -> None:
    a1, a2 = resident("a1", "1", "1Gi"), resident("a2", "500m", "1Gi")
    b1 = resident("b1", "2", "1Gi", node="node-b")
    pending = resident("p", "4", "1Gi")
    del pending["spec"]["nodeName"]
    usage = NodeUsage([a1, b1, pending, a2])
    assert usage.beside(a1) == Amounts(500, 2**30)
    assert usage.beside(b1) == Amounts(0, 0)
    grown = resident("a2", "1500m", "1Gi")
    usage.record(grown)  # accepted resize: counted at its new size, not twice
    assert usage.beside(a1) == Amounts(1500, 2**30)


def test_a_growth_past_the_whole_node_never_fits() -> None:
    """The kubelet's Infeasible: no neighbour leaving would make room."""
    target = resident("web-1", "500m", "1Gi")
    others = [resident("db-1", "2", "4Gi")]
    crowded = node_fit(target, grow("app", 3000, GI), node(), others)
    assert not crowded.fits and not crowded.never  # fits alone: room may come (Deferred)
    whole = node_fit(target, grow("app", 4001, GI), node(), others)
    assert not whole.fits and whole.never
    assert whole.reason == (
        "never fits node node-a: cpu needs 4001, 4000 allocatable "
        "(cpu in millicores, memory in bytes)"
    )
    alone = node_fit(target, grow("app", 4000, GI), node(), [])
    assert alone.fits
