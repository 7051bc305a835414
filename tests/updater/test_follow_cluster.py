"""`tailor follow` against the real kube-apiserver and the kubelet simulator."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tailor.cli.main import app
from tests.cli_text import plain
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.podtools import (
    applied_requests,
    container_status,
    get_pod,
    pod_manifest,
    resize,
    wait_for_pod,
)
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import Mi
from tests.updater.following import follow, period, start, write_schedule


def test_a_running_pod_is_resized_in_place_to_the_period_in_force(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    node = f"follow-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    manifest = pod_manifest(
        "web", node=node, requests={"cpu": "500m", "memory": "128Mi"}, limits={"memory": "256Mi"}
    )
    before = start(kube_api, kube_namespace, manifest)
    schedule = write_schedule(
        tmp_path / "schedule.json",
        [period(kube_namespace, "web", 0.75, 200 * Mi, memory_limit=300 * Mi)],
    )

    [outcome] = follow(kube_cluster, schedule)
    assert (outcome["pod"], outcome["action"], outcome["applied"]) == ("web", "resize", True)
    pod = wait_for_pod(
        kube_api,
        kube_namespace,
        "web",
        lambda p: applied_requests(p)["cpu"] == "750m",
        what="resize applied by the kubelet",
    )
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "750m", "memory": str(200 * Mi)}
    assert resources["limits"] == {"memory": str(300 * Mi)}  # the plan's memoryLimit, not 2x
    assert pod["metadata"]["uid"] == before["metadata"]["uid"]
    assert container_status(pod)["restartCount"] == 0

    [again] = follow(kube_cluster, schedule)
    assert again["action"] == "none" and again["detail"] == "at its scheduled size"
    assert (
        get_pod(kube_api, kube_namespace, "web")["metadata"]["generation"]
        == (pod["metadata"]["generation"])
    )


def test_a_resize_that_would_not_fit_the_node_is_not_sent(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    node = f"full-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="2", memory="8Gi")
    start(kube_api, kube_namespace, pod_manifest("filler", node=node, requests={"cpu": "1500m"}))
    before = start(
        kube_api, kube_namespace, pod_manifest("web", node=node, requests={"cpu": "250m"})
    )
    schedule = write_schedule(tmp_path / "s.json", [period(kube_namespace, "web", 1.0, 64 * Mi)])

    [outcome] = follow(kube_cluster, schedule, "--evict")
    assert outcome["action"] == "none"
    assert outcome["detail"].startswith(f"does not fit node {node}: cpu needs 1000, 500 free")
    assert outcome["detail"].endswith("not evicted: no controller would replace it")
    after = get_pod(kube_api, kube_namespace, "web")
    assert after["metadata"]["generation"] == before["metadata"]["generation"]


def test_the_node_room_goes_to_the_largest_scale_up_first_whatever_the_listing_order(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    node = f"room-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="2200m", memory="8Gi")
    # listed first (by name), but it grows by 62 %; the other grows fivefold
    start(kube_api, kube_namespace, pod_manifest("a-big", node=node, requests={"cpu": "800m"}))
    start(kube_api, kube_namespace, pod_manifest("b-small", node=node, requests={"cpu": "200m"}))
    rows = [
        period(kube_namespace, "a-big", 1.3, 64 * Mi),
        period(kube_namespace, "b-small", 1.2, 64 * Mi),
    ]
    schedule = write_schedule(tmp_path / "s.json", rows)

    first, second = follow(kube_cluster, schedule)  # 1.2 cores free: room for one of the two
    assert (first["pod"], first["action"], first["applied"]) == ("b-small", "resize", True)
    assert (second["pod"], second["action"]) == ("a-big", "none")
    assert second["detail"].startswith(f"does not fit node {node}: cpu needs 1300, 1000 free")


def test_a_dry_run_is_validated_by_the_api_server_and_changes_nothing(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    node = f"dry-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    before = start(
        kube_api, kube_namespace, pod_manifest("web", node=node, requests={"cpu": "250m"})
    )
    schedule = write_schedule(tmp_path / "s.json", [period(kube_namespace, "web", 0.5, 64 * Mi)])

    [outcome] = follow(kube_cluster, schedule, "--dry-run")
    assert (outcome["action"], outcome["applied"]) == ("resize", True)
    after = get_pod(kube_api, kube_namespace, "web")
    assert after["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "250m"}
    assert after["metadata"]["generation"] == before["metadata"]["generation"]

    # a dry run shows the pass a real one would make: room it gave away is gone
    start(kube_api, kube_namespace, pod_manifest("web-2", node=node, requests={"cpu": "250m"}))
    rows = [period(kube_namespace, w, 2.2, 64 * Mi) for w in ("web", "web-2")]
    first, second = follow(kube_cluster, write_schedule(tmp_path / "two.json", rows), "--dry-run")
    assert first["action"] == "resize"
    assert second["action"] == "none"
    assert second["detail"].startswith(f"does not fit node {node}: cpu needs 2200, 1800 free")


def test_the_kubelets_infeasible_answer_is_reported_and_not_resent(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    """A Guaranteed pod beside the static CPU manager: the node has room, the kubelet says no."""
    node = f"pinned-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi", cpu_manager_policy="static")
    size = {"cpu": "1", "memory": "128Mi"}
    start(kube_api, kube_namespace, pod_manifest("pinned", node=node, requests=size, limits=size))
    schedule = write_schedule(
        tmp_path / "s.json", [period(kube_namespace, "pinned", 2.0, 128 * Mi)]
    )

    [sent] = follow(kube_cluster, schedule)
    assert sent["action"] == "resize"
    pod = wait_for_pod(
        kube_api,
        kube_namespace,
        "pinned",
        lambda p: any(c["type"] == "PodResizePending" for c in p["status"].get("conditions", [])),
        what="kubelet answered",
    )
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == "2"  # still Guaranteed

    [answer] = follow(kube_cluster, schedule)
    assert answer["action"] == "none"
    assert answer["detail"].startswith("resize Infeasible: Resize is infeasible for Guaranteed")
    assert answer["detail"].endswith("eviction not allowed (--evict)")
    assert (
        get_pod(kube_api, kube_namespace, "pinned")["metadata"]["generation"]
        == (pod["metadata"]["generation"])
    )


def test_a_deferred_resize_is_awaited_until_its_timeout(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    """Deferred by the kubelet (another actor asked for room the node lacks): wait, then give up."""
    node = f"wait-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="2", memory="8Gi")
    start(kube_api, kube_namespace, pod_manifest("filler", node=node, requests={"cpu": "1"}))
    start(kube_api, kube_namespace, pod_manifest("web", node=node, requests={"cpu": "500m"}))
    resize(kube_api, kube_namespace, "web", requests={"cpu": "1500m"})
    wait_until(
        lambda: any(
            c["type"] == "PodResizePending" and c["reason"] == "Deferred"
            for c in get_pod(kube_api, kube_namespace, "web")["status"].get("conditions", [])
        ),
        what="Deferred",
    )
    schedule = write_schedule(tmp_path / "s.json", [period(kube_namespace, "web", 1.5, 64 * Mi)])

    [waiting] = follow(kube_cluster, schedule)
    assert (waiting["action"], waiting["detail"]) == ("wait", "resize Deferred")
    [stuck] = follow(kube_cluster, schedule, "--deferred-timeout", "0s", "--evict")
    assert stuck["action"] == "none"
    assert stuck["detail"].startswith("resize Deferred for ")
    assert "Node didn't have enough resource: cpu" in stuck["detail"]
    assert stuck["detail"].endswith("not evicted: no controller would replace it")


def test_a_broken_schedule_or_kubeconfig_is_refused_before_anything_changes(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    node = f"bad-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    before = start(
        kube_api, kube_namespace, pod_manifest("web", node=node, requests={"cpu": "250m"})
    )
    good = period(kube_namespace, "web", 0.5, 64 * Mi)
    broken = write_schedule(tmp_path / "s.json", [good, {**good, "cpu": "lots"}])
    args = [
        "follow",
        "--once",
        "--schedule",
        str(broken),
        "--kubeconfig",
        str(kube_cluster.kubeconfig),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "row 1, cpu" in plain(result.output)

    fine = write_schedule(tmp_path / "fine.json", [good])
    missing = tmp_path / "nope" / "kubeconfig"
    result = CliRunner().invoke(
        app, ["follow", "--once", "--schedule", str(fine), "--kubeconfig", str(missing)]
    )
    assert result.exit_code == 2
    assert "does not exist" in plain(result.output)

    kubeconfig = ["--kubeconfig", str(kube_cluster.kubeconfig)]
    for flags, words in (
        ([], "give --schedule FILE, --schedule-configmap NAMESPACE/NAME or --recommendations"),
        (["--schedule", str(fine), "--schedule-configmap", "a/b"], "give --schedule FILE,"),
        (["--schedule", str(fine), "--recommendations"], "give --schedule FILE,"),
        (["--schedule-configmap", "no-slash"], "want NAMESPACE/NAME"),
        (["--schedule-configmap", f"{kube_namespace}/absent"], "absent does not exist"),
        (["--schedule", str(fine), "--at", "noon"], "not an RFC 3339 time: 'noon'"),
        (["--schedule", str(fine), "--at", "2026-11-23T12:00"], "must carry a timezone"),
        (["--schedule", str(fine), "--eviction-rate-limit", "nan"], "must be a finite number"),
        (["--schedule", str(fine), "--eviction-rate-burst", "0"], "--eviction-rate-burst"),
        (["--schedule", str(fine), "--evict-after-oom-threshold", "soon"], "invalid duration"),
        (["--schedule", str(fine), "--admission-status-lease", "one"], "want NAMESPACE/NAME"),
        (["--schedule", str(fine), "--pod-update-threshold", "-0.1"], "--pod-update-threshold"),
    ):
        result = CliRunner().invoke(app, ["follow", "--once", *flags, *kubeconfig])
        assert result.exit_code == 2, flags
        assert words in plain(result.output), result.output
    kube_api.create(
        f"/api/v1/namespaces/{kube_namespace}/configmaps",
        {"metadata": {"name": "plan"}, "data": {"other.json": "[]"}},
    )
    result = CliRunner().invoke(
        app, ["follow", "--once", "--schedule-configmap", f"{kube_namespace}/plan", *kubeconfig]
    )
    assert result.exit_code == 2
    assert "has no key schedule.json" in plain(result.output)
    after = get_pod(kube_api, kube_namespace, "web")
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
