"""The updater on the real API server and kubelet simulator: Events, others' resizes,
evictions whose replacement could not land, and passes that do nothing saying why."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tailor.cli.main import app
from tests.cluster.controlplane import ControlPlane
from tests.cluster.fixtures import FullNamespace
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.podtools import container_resources, get_pod, pod_manifest, wait_for_pod
from tests.cluster.rawapi import Json, RawApi, pod_path
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import create_deployment, deployment, running_pods
from tests.updater.following import NO_WEBHOOK, follow, period, start, write_schedule

Mi = 2**20


def events(api: RawApi, namespace: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of kube-tailor's Events on object `name`."""
    listed = api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    return [
        (e["type"], e["reason"], e["message"])
        for e in listed
        if e["involvedObject"]["name"] == name
        and e.get("source", {}).get("component", "").startswith("kube-tailor")
    ]


def reasons(api: RawApi, namespace: str, name: str) -> set[str]:
    return {reason for _, reason, _ in events(api, namespace, name)}


def resized_by_another(api: RawApi, namespace: str, name: str, cpu: str) -> Json:
    """What `kubectl patch --subresource resize` does: its own field manager."""
    body = {"spec": {"containers": [{"name": "app", "resources": container_resources(
        {"cpu": cpu, "memory": "128Mi"}, None)}]}}  # fmt: skip
    return dict(
        api.request(
            "PATCH",
            pod_path(namespace, name, "resize"),
            body,
            query={"fieldManager": "kubectl-patch"},
            content_type="application/strategic-merge-patch+json",
        )
    )


def test_others_resizes_are_awaited_and_reported_and_ours_are_recorded(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    api, namespace = kube_api, kube_namespace
    node = f"others-{namespace}"
    kubelet_sim.register_node(node, cpu="1", memory="8Gi")
    start(
        api, namespace, pod_manifest("web", node=node, requests={"cpu": "300m", "memory": "128Mi"})
    )
    start(
        api, namespace, pod_manifest("db", node=node, requests={"cpu": "400m", "memory": "128Mi"})
    )
    schedule = write_schedule(tmp_path / "s.json", [period(namespace, "web", 0.35, 128 * Mi)])

    [ours] = follow(kube_cluster, schedule)
    assert (ours["action"], ours["applied"], ours["event"]) == (
        "resize",
        True,
        "InPlaceResizedByVPA",
    )
    [(kind, reason, message)] = events(api, namespace, "web")
    assert (kind, reason) == ("Normal", "InPlaceResizedByVPA")
    assert message.startswith("Pod was resized in place by kube-tailor: app: cpu 350m")

    # someone else asks for 650m: beside db's 400m on a 1-core node, the kubelet defers it
    resized_by_another(api, namespace, "web", "650m")
    wait_for_pod(api, namespace, "web", lambda p: any(
        c["type"] == "PodResizePending" for c in p["status"].get("conditions", [])
    ), what="their resize Deferred")  # fmt: skip
    [kept] = follow(kube_cluster, schedule)
    assert kept["action"] == "wait" and kept["event"] == "ResizeByOthersAwaited"
    assert kept["detail"] == (
        "resized by kubectl-patch, not by kube-tailor; their resize is Deferred: awaited, not "
        "overwritten (--overwrite-others-resizes replaces it)"
    )
    pod = get_pod(api, namespace, "web")
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "650m"  # theirs
    assert "ResizeByOthersAwaited" in reasons(api, namespace, "web")

    # their size is the plan now: nothing to change, and the kubelet's Deferred is reported
    theirs = write_schedule(tmp_path / "t.json", [period(namespace, "web", 0.65, 128 * Mi)])
    [waiting] = follow(kube_cluster, theirs)
    assert waiting["action"] == "wait" and waiting["event"] == "ResizeDeferred"
    [(kind, message)] = [
        (k, m) for k, r, m in events(api, namespace, "web") if r == "ResizeDeferred"
    ]
    assert kind == "Warning" and message.startswith("resize Deferred")

    # the operator asks: the plan goes over their resize
    [over] = follow(kube_cluster, schedule, "--overwrite-others-resizes")
    assert (over["action"], over["applied"]) == ("resize", True)
    pod = get_pod(api, namespace, "web")
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "350m"


def test_a_pass_with_nothing_to_do_says_why(
    kube_api: RawApi, kube_cluster: ControlPlane, kube_namespace: str, tmp_path: Path
) -> None:
    rows = [period(kube_namespace, "web", 0.5, 128 * Mi)]
    schedule = write_schedule(tmp_path / "s.json", rows)
    config = str(kube_cluster.kubeconfig)
    result = CliRunner().invoke(
        app, ["follow", "--once", "--schedule", str(schedule), "--kubeconfig", config]
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert (
        f"nothing to do: no running pod of the workloads scheduled now ({kube_namespace}/web)"
        in said
    )
    late = ["--at", "2000-01-01T00:00:00Z"]
    result = CliRunner().invoke(
        app, ["follow", "--once", "--schedule", str(schedule), "--kubeconfig", config, *late]
    )
    said = " ".join(result.output.split())
    assert "nothing to do: no period of the schedule is in force at 2000-01-01 00:00:00 UTC" in said


def test_no_eviction_for_a_replacement_that_would_land_nowhere_then_a_pdb_then_eviction(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    label = f"evict-{namespace}"
    sim.register_node(f"{label}-small", cpu="2", memory="8Gi", labels={"tailor-test": label})
    create_deployment(api, namespace, deployment("web", label, replicas=2))
    wait_until(lambda: len(running_pods(api, namespace)) == 2, timeout=60, what="web x2")
    before = {p["metadata"]["uid"] for p in running_pods(api, namespace)}
    # 3 cores: more than the node has at all; no node with the pod's selector holds it
    schedule = write_schedule(tmp_path / "s.json", [period(namespace, "web", 3.0, 128 * Mi)])
    outcomes = follow(full_namespace.cluster, schedule, "--evict", NO_WEBHOOK)
    assert {o["action"] for o in outcomes} == {"none"}
    for outcome in outcomes:
        assert outcome["event"] == "ReplacementWouldNotFit"
        assert (
            "not evicted: the replacement (cpu 3000m, memory 134217728) would fit no node"
            in (outcome["detail"])
        )
        assert f"{label}-small: cpu 1750 free" in outcome["detail"]
        assert ("Warning", "ReplacementWouldNotFit") in {
            (k, r) for k, r, _ in events(api, namespace, outcome["pod"])
        }
    assert {p["metadata"]["uid"] for p in running_pods(api, namespace)} == before

    # a node with room arrives; a PodDisruptionBudget still forbids the eviction
    sim.register_node(f"{label}-big", cpu="8", memory="16Gi", labels={"tailor-test": label})
    pdb = {"metadata": {"name": "web"}, "spec": {"minAvailable": 2,
           "selector": {"matchLabels": {"app": "web"}}}}  # fmt: skip
    pdbs = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    api.create(pdbs, pdb)
    wait_until(
        lambda: (api.get(f"{pdbs}/web").get("status") or {}).get("currentHealthy") == 2,
        timeout=60,
        what="the PDB counted",
    )
    [refused, *_] = follow(full_namespace.cluster, schedule, "--evict", NO_WEBHOOK)
    assert (refused["action"], refused["applied"], refused["event"]) == (
        "evict", False, "EvictionRefused"
    )  # fmt: skip
    assert "EvictionRefused" in reasons(api, namespace, refused["pod"])
    api.delete(f"{pdbs}/web")
    [evicted, *_] = follow(full_namespace.cluster, schedule, "--evict", NO_WEBHOOK)
    assert (evicted["action"], evicted["applied"], evicted["event"]) == (
        "evict",
        True,
        "EvictedByVPA",
    )
    [(kind, message)] = [
        (k, m) for k, r, m in events(api, namespace, evicted["pod"]) if r == "EvictedByVPA"
    ]
    assert kind == "Normal" and message.startswith("Pod was evicted by kube-tailor")
