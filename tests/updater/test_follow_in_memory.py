"""The updater's pass through the cluster port, on a cluster held in memory.

The same pass `tailor follow` runs against the real API server (test_follow_cluster.py and
its neighbours), here with no server: what it reads comes from `InMemoryCluster`, and what
it writes (resizes, evictions) is applied there, so a second pass sees the first's work.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tailor.schedule_file import ScheduleRow
from tests.in_memory_cluster import InMemoryCluster
from tests.updater.pods import Obj, container, container_status, node, pod
from updater.decide import Action, Policy
from updater.follow import PassOptions, follow_once

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
Mi = 2**20


def _row(workload: str, cpu: float, memory: float) -> ScheduleRow:
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return ScheduleRow.model_validate(
        {
            "namespace": "shop",
            "workload": workload,
            "container": "app",
            "start": (NOW - timedelta(hours=1)).strftime(stamp),
            "end": (NOW + timedelta(hours=1)).strftime(stamp),
            "cpu": cpu,
            "memory": memory,
            "memoryLimit": memory,
        }
    )


def _running(name: str, cpu: str, memory: str = "128Mi", owner: str | None = None) -> Obj:
    requests = {"cpu": cpu, "memory": memory}
    found = pod(
        [container("app", requests, {"memory": memory})],
        name=name,
        statuses=[container_status("app", requests, requests)],
    )
    if owner is not None:
        found["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True}
        ]
    return found


def _requests(cluster: InMemoryCluster, name: str) -> dict[str, str]:
    [found] = [p for p in cluster.pod_objects if p["metadata"]["name"] == name]
    return dict(found["spec"]["containers"][0]["resources"]["requests"])


def test_a_running_pod_is_resized_to_the_period_in_force_and_then_left_alone() -> None:
    cluster = InMemoryCluster(
        pod_objects=[_running("web", "500m")], nodes_by_name={"node-a": node()}
    )
    rows = [_row("web", 0.75, 200 * Mi)]

    [outcome] = follow_once(cluster, rows, NOW, PassOptions())
    assert (outcome.pod, outcome.action, outcome.applied) == ("web", Action.RESIZE, True)
    assert _requests(cluster, "web") == {"cpu": "750m", "memory": str(200 * Mi)}
    # the resize, then when it was made, on the pod (for the change budget)
    assert cluster.writes == [("resize", "shop/web", False), ("annotate", "shop/web", False)]
    [resized] = cluster.pod_objects
    assert resized["metadata"]["annotations"]

    [again] = follow_once(cluster, rows, NOW, PassOptions())
    assert again.action is Action.NONE
    assert len(cluster.writes) == 2  # nothing more sent


def test_a_dry_run_sends_the_resize_as_a_dry_run_and_changes_nothing() -> None:
    cluster = InMemoryCluster(
        pod_objects=[_running("web", "500m")], nodes_by_name={"node-a": node()}
    )

    [outcome] = follow_once(cluster, [_row("web", 1.0, 128 * Mi)], NOW, PassOptions(dry_run=True))
    assert (outcome.action, outcome.applied) == (Action.RESIZE, True)
    assert cluster.writes == [("resize", "shop/web", True)]
    assert _requests(cluster, "web")["cpu"] == "500m"


def test_a_refused_resize_is_reported_with_the_api_servers_answer() -> None:
    cluster = InMemoryCluster(
        pod_objects=[_running("web", "500m")],
        nodes_by_name={"node-a": node()},
        refuse={"resize": (403, "exceeded quota: compute")},
    )

    [outcome] = follow_once(cluster, [_row("web", 1.0, 128 * Mi)], NOW, PassOptions())
    assert (outcome.action, outcome.applied) == (Action.RESIZE, False)
    assert outcome.detail == "resize refused (403): exceeded quota: compute"
    assert _requests(cluster, "web")["cpu"] == "500m"


def test_the_node_room_goes_to_the_largest_scale_up_and_the_other_waits() -> None:
    cluster = InMemoryCluster(
        pod_objects=[_running("a-big", "800m"), _running("b-small", "200m")],
        nodes_by_name={"node-a": node(cpu="2200m")},
    )
    rows = [_row("a-big", 1.3, 128 * Mi), _row("b-small", 1.2, 128 * Mi)]

    first, second = follow_once(cluster, rows, NOW, PassOptions())
    assert (first.pod, first.action, first.applied) == ("b-small", Action.RESIZE, True)
    assert (second.pod, second.action) == ("a-big", Action.NONE)
    assert second.detail.startswith("does not fit node node-a: cpu needs 1300, 1000 free")
    assert _requests(cluster, "a-big")["cpu"] == "800m"


def test_a_pod_larger_than_its_node_is_evicted_where_it_fits_once_its_group_can_spare_it() -> None:
    owner = "web-5d8f7c9b4"
    replica_set = {
        "metadata": {"namespace": "shop", "name": owner},
        "spec": {"replicas": 2},
        "status": {"replicas": 2},
    }
    cluster = InMemoryCluster(
        pod_objects=[
            _running("web-1", "500m", owner=owner),
            _running("web-2", "500m", owner=owner),
        ],
        # its replacement fits node-b only
        nodes_by_name={"node-a": node(cpu="2"), "node-b": node("node-b", cpu="8")},
        controller_objects={"ReplicaSet": {("shop", owner): replica_set}},
    )
    options = PassOptions(policy=Policy(evict=True))

    outcomes = follow_once(cluster, [_row("web", 3.0, 128 * Mi)], NOW, options)
    evicted = [o for o in outcomes if o.action is Action.EVICT]
    kept = [o for o in outcomes if o.action is Action.NONE]
    assert len(evicted) == 1 and evicted[0].applied and evicted[0].detail.startswith("evicted: ")
    assert len(kept) == 1 and "1 of 2 replicas already evicted this pass" in kept[0].detail
    assert [p["metadata"]["name"] for p in cluster.pod_objects] == [kept[0].pod]
    assert [verb for verb, _, _ in cluster.writes] == ["evict"]
