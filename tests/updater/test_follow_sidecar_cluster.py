"""`tailor follow` resizes a native sidecar in place on the real API server (1.33+ allows
it) and counts it in the node's room; a plain init container is reported, not resized."""

from __future__ import annotations

from pathlib import Path

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.podtools import get_pod, init_container, pod_manifest, wait_for_pod
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.workloads import Mi
from tests.updater.following import follow, period, start, write_schedule


def sidecar_status(pod: Json, name: str = "proxy") -> Json:
    statuses = pod["status"].get("initContainerStatuses") or []
    return dict(next((s for s in statuses if s["name"] == name), {}))


def row(namespace: str, container: str, cpu: float, memory: float) -> Json:
    # no memoryLimit planned: limits keep their ratio to the requests
    return {**period(namespace, "web", cpu, memory, memory_limit=None), "container": container}


def test_a_native_sidecar_is_resized_in_place_and_counted_in_the_nodes_room(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    node = f"sidecar-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="1", memory="8Gi")
    manifest = pod_manifest("web", node=node, requests={"cpu": "500m", "memory": "128Mi"})
    manifest["spec"]["initContainers"] = [
        init_container("setup", {"cpu": "50m", "memory": "16Mi"}, sidecar=False),
        init_container("proxy", {"cpu": "100m", "memory": "32Mi"}, {"memory": "64Mi"}),
    ]
    before = start(kube_api, kube_namespace, manifest)
    rows = [row(kube_namespace, "proxy", 0.3, 48 * Mi), row(kube_namespace, "setup", 0.2, 32 * Mi)]
    schedule = write_schedule(tmp_path / "grow.json", rows)

    [outcome] = follow(kube_cluster, schedule)
    assert (outcome["pod"], outcome["action"], outcome["applied"]) == ("web", "resize", True)
    assert "setup: init container, not resized" in outcome["detail"]
    pod = wait_for_pod(
        kube_api,
        kube_namespace,
        "web",
        lambda p: (
            (sidecar_status(p).get("resources") or {}).get("requests", {}).get("cpu") == "300m"
        ),
        what="the sidecar's resize applied by the kubelet",
    )
    proxy = pod["spec"]["initContainers"][1]["resources"]
    assert proxy == {
        "requests": {"cpu": "300m", "memory": str(48 * Mi)},
        "limits": {"memory": "96Mi"},  # 2x the request, as before
    }
    assert pod["spec"]["initContainers"][0]["resources"] == {
        "requests": {"cpu": "50m", "memory": "16Mi"}
    }
    assert pod["metadata"]["uid"] == before["metadata"]["uid"]
    assert sidecar_status(pod)["restartCount"] == 0

    # 500m app + 600m proxy on a 1-core node: refused before it is sent, as Infeasible
    too_big = write_schedule(tmp_path / "big.json", [row(kube_namespace, "proxy", 0.6, 48 * Mi)])
    [refused] = follow(kube_cluster, too_big)
    assert refused["action"] == "none"
    assert refused["detail"].startswith(f"never fits node {node}: cpu needs 1100, 1000 allocatable")
    after = get_pod(kube_api, kube_namespace, "web")
    assert after["metadata"]["generation"] == pod["metadata"]["generation"]
