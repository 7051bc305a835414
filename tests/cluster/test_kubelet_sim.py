"""The kubelet simulator against the real API server: resize answers, retries,
usage, OOM kills, evictions and the metrics it serves."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.controlplane import ClusterOptions, ControlPlane
from tests.cluster.fixtures import create_namespace, namespace_name
from tests.cluster.kubelet_sim import KubeletSimulator, UsageSeries
from tests.cluster.kubelet_sim.podstatus import fake_id
from tests.cluster.podtools import (
    allocated,
    applied_requests,
    condition,
    container_status,
    create_pod,
    get_pod,
    pod_manifest,
    required_condition,
    resize,
    wait_for_pod,
)
from tests.cluster.rawapi import Json, RawApi, pod_path
from tests.cluster.waiting import wait_until

pytestmark = pytest.mark.cluster
Mi = 2**20


@pytest.fixture
def api(kube_cluster: ControlPlane) -> Iterator[RawApi]:
    with kube_cluster.api_client() as client:
        yield RawApi(client)


def start_pod(api: RawApi, namespace: str, manifest: Json) -> Json:
    name = manifest["metadata"]["name"]
    create_pod(api, namespace, manifest)
    return wait_for_pod(
        api, namespace, name, lambda pod: pod["status"].get("phase") == "Running", what="Running"
    )


def pending(api: RawApi, namespace: str, name: str) -> Json | None:
    return condition(get_pod(api, namespace, name), "PodResizePending")


def test_the_kep_worked_sequence_on_an_api_server_without_the_1_36_validator(
    kube_cluster_factory: Callable[[ClusterOptions], ControlPlane],
    kubelet_sim_factory: Callable[..., KubeletSimulator],
    request: pytest.FixtureRequest,
) -> None:
    """KEP-1287 'Flow Control': 1 -> 1.5 CPU accepted, 2 Deferred while 1.5 is in
    progress, 1.6 accepted, 100 Infeasible. Kubernetes <= 1.35 API behaviour
    (a 1.36 API server refuses the 100 CPUs itself, see test_resize_api)."""
    cluster = kube_cluster_factory(ClusterOptions(resize_validator=False))
    sim = kubelet_sim_factory(cluster)
    namespace = namespace_name(request.node.name)
    with cluster.api_client() as client:
        api = RawApi(client)
        create_namespace(api, namespace)
        node = f"kep-{namespace}"
        sim.register_node(node, cpu="4", memory="8Gi")
        memory = {"memory": "128Mi"}
        start_pod(api, namespace, pod_manifest("other", node=node, requests={"cpu": "2300m"}))
        start_pod(
            api,
            namespace,
            pod_manifest("kep", node=node, requests={"cpu": "1", **memory}, limits=memory),
        )
        sim.hold_actuation(namespace, "kep")

        resize(api, namespace, "kep", requests={"cpu": "1500m"})
        pod = wait_for_pod(
            api,
            namespace,
            "kep",
            lambda p: condition(p, "PodResizeInProgress"),
            what="resize #1 in progress",
        )
        assert allocated(pod)["cpu"] == "1500m"
        assert applied_requests(pod)["cpu"] == "1"

        resize(api, namespace, "kep", requests={"cpu": "2"})
        deferred = wait_until(lambda: pending(api, namespace, "kep"), what="resize #2 pending")
        assert deferred["reason"] == "Deferred"
        assert deferred["message"] == (
            "Node didn't have enough resource: cpu, requested: 2000, used: 2300, capacity: 4000"
        )
        pod = get_pod(api, namespace, "kep")
        assert condition(pod, "PodResizeInProgress") is not None  # both at once
        assert allocated(pod)["cpu"] == "1500m"

        sim.release_actuation(namespace, "kep")
        pod = wait_for_pod(
            api,
            namespace,
            "kep",
            lambda p: applied_requests(p)["cpu"] == "1500m",
            what="resize #1 applied",
        )
        assert condition(pod, "PodResizeInProgress") is None
        assert required_condition(pod, "PodResizePending")["reason"] == "Deferred"

        resize(api, namespace, "kep", requests={"cpu": "1600m"})
        pod = wait_for_pod(
            api,
            namespace,
            "kep",
            lambda p: applied_requests(p)["cpu"] == "1600m",
            what="resize #3 applied",
        )
        assert condition(pod, "PodResizePending") is None
        assert condition(pod, "PodResizeInProgress") is None

        answer = resize(api, namespace, "kep", requests={"cpu": "100"})
        infeasible = wait_until(lambda: pending(api, namespace, "kep"), what="resize #4 pending")
        assert infeasible["reason"] == "Infeasible"
        assert infeasible["message"] == (
            "Node didn't have enough capacity: cpu, requested: 100000, capacity: 4000"
        )
        assert infeasible["observedGeneration"] == answer["metadata"]["generation"]
        assert allocated(get_pod(api, namespace, "kep"))["cpu"] == "1600m"


def test_deferred_resizes_are_retried_in_kubelet_order_when_a_pod_leaves(
    api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str
) -> None:
    node = f"retry-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    one_cpu = {"cpu": "1", "memory": "128Mi"}
    start_pod(api, kube_namespace, pod_manifest("filler", node=node, requests=one_cpu))
    start_pod(api, kube_namespace, pod_manifest("burstable", node=node, requests=one_cpu))
    start_pod(
        api,
        kube_namespace,
        pod_manifest("guaranteed", node=node, requests=one_cpu, limits=one_cpu),
    )
    resize(api, kube_namespace, "burstable", requests={"cpu": "2200m"})
    wait_until(lambda: pending(api, kube_namespace, "burstable"), what="burstable Deferred")
    bigger = {"cpu": "2200m", "memory": "128Mi"}
    resize(api, kube_namespace, "guaranteed", requests=bigger, limits=bigger)
    first = wait_until(lambda: pending(api, kube_namespace, "guaranteed"), what="Deferred")
    assert first["reason"] == "Deferred"

    # Room for one of them: the Guaranteed one goes first although it waited less.
    api.delete(pod_path(kube_namespace, "filler"))
    wait_until(
        lambda: allocated(get_pod(api, kube_namespace, "guaranteed"))["cpu"] == "2200m",
        what="guaranteed resize accepted",
    )
    still = pending(api, kube_namespace, "burstable")
    assert still is not None and still["reason"] == "Deferred"
    assert "used: 2200, capacity: 4000" in still["message"]

    api.delete(pod_path(kube_namespace, "guaranteed"))
    wait_until(
        lambda: applied_requests(get_pod(api, kube_namespace, "burstable"))["cpu"] == "2200m",
        what="burstable resize applied once the other pod left",
    )
    assert pending(api, kube_namespace, "burstable") is None


def test_guaranteed_cpu_resizes_are_infeasible_beside_the_static_cpu_manager(
    api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str
) -> None:
    node = f"static-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi", cpu_manager_policy="static")
    size = {"cpu": "1", "memory": "128Mi"}
    start_pod(api, kube_namespace, pod_manifest("pinned", node=node, requests=size, limits=size))
    resize(api, kube_namespace, "pinned", requests={"cpu": "2"}, limits={"cpu": "2"})
    infeasible = wait_until(lambda: pending(api, kube_namespace, "pinned"), what="Infeasible")
    assert infeasible["reason"] == "Infeasible"
    assert infeasible["message"] == (
        'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'
    )


def test_an_oom_kill_shows_in_the_pod_status(
    api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str
) -> None:
    node = f"oom-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    kubelet_sim.set_usage(
        kube_namespace, "leaky", "app", UsageSeries((0.1,), (100 * Mi, 300 * Mi), 0.5)
    )
    manifest = pod_manifest(
        "leaky", node=node, requests={"cpu": "100m", "memory": "128Mi"}, limits={"memory": "256Mi"}
    )
    start_pod(api, kube_namespace, manifest)
    pod = wait_for_pod(
        api,
        kube_namespace,
        "leaky",
        lambda p: container_status(p).get("restartCount", 0) >= 1,
        what="OOM kill",
    )
    status = container_status(pod)
    terminated = status["lastState"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
    assert "running" in status["state"]


def test_a_memory_limit_cut_below_usage_stays_in_progress_with_error(
    api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str
) -> None:
    node = f"cut-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    kubelet_sim.set_usage(kube_namespace, "app", "app", UsageSeries.constant(0.1, 300 * Mi))
    manifest = pod_manifest(
        "app", node=node, requests={"cpu": "100m", "memory": "128Mi"}, limits={"memory": "512Mi"}
    )
    start_pod(api, kube_namespace, manifest)
    resize(api, kube_namespace, "app", limits={"memory": "256Mi"})
    pod = wait_for_pod(
        api,
        kube_namespace,
        "app",
        lambda p: (condition(p, "PodResizeInProgress") or {}).get("reason") == "Error",
        what="resize Error",
    )
    error = required_condition(pod, "PodResizeInProgress")
    assert error["message"] == (
        "cannot decrease memory limits: ["
        f"attempting to set pod memory limit ({256 * Mi}) below current usage ({300 * Mi}), "
        f'attempting to set container "app" memory limit ({256 * Mi}) below current usage '
        f"({300 * Mi})]"
    )
    kubelet_sim.set_usage(kube_namespace, "app", "app", UsageSeries.constant(0.1, 200 * Mi))
    pod = wait_for_pod(
        api,
        kube_namespace,
        "app",
        lambda p: condition(p, "PodResizeInProgress") is None,
        what="resize applied once usage fell",
    )
    assert container_status(pod)["resources"]["limits"]["memory"] == "256Mi"


def test_memory_pressure_evicts_the_greediest_pod(
    api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str
) -> None:
    node = f"pressure-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="1Gi")
    kubelet_sim.set_usage(kube_namespace, "greedy", "app", UsageSeries.constant(0.1, 600 * Mi))
    kubelet_sim.set_usage(kube_namespace, "modest", "app", UsageSeries.constant(0.1, 400 * Mi))
    for name, request in (("greedy", "128Mi"), ("modest", "512Mi")):
        manifest = pod_manifest(name, node=node, requests={"cpu": "100m", "memory": request})
        create_pod(api, kube_namespace, manifest)
    evicted = wait_for_pod(
        api,
        kube_namespace,
        "greedy",
        lambda p: p["status"].get("reason") == "Evicted",
        what="eviction",
    )
    assert evicted["status"]["phase"] == "Failed"
    assert "Container app was using 600Mi, request is 128Mi" in evicted["status"]["message"]
    assert required_condition(evicted, "DisruptionTarget")["reason"] == "TerminationByKubelet"
    # the simulator may evict the greedy pod before it has started the modest one
    modest = wait_for_pod(
        api,
        kube_namespace,
        "modest",
        lambda p: p["status"].get("phase") in ("Running", "Failed"),
        what="the modest pod started",
    )
    assert modest["status"]["phase"] == "Running"


def test_graceful_deletions_and_evictions_are_finished(
    api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str
) -> None:
    node = f"gone-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    for name in ("deleted", "evicted"):
        start_pod(api, kube_namespace, pod_manifest(name, node=node, requests={"cpu": "100m"}))
    api.delete(pod_path(kube_namespace, "deleted"), {"gracePeriodSeconds": 30})
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "evicted", "namespace": kube_namespace},
    }
    api.create(pod_path(kube_namespace, "evicted", "eviction"), eviction)

    def remaining() -> set[str]:
        pods = api.get(f"/api/v1/namespaces/{kube_namespace}/pods")["items"]
        return {p["metadata"]["name"] for p in pods}

    wait_until(lambda: not remaining(), what="both pods gone")


def test_a_pod_that_does_not_fit_its_node_is_rejected(
    api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str
) -> None:
    node = f"small-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="2", memory="8Gi")
    create_pod(api, kube_namespace, pod_manifest("huge", node=node, requests={"cpu": "3"}))
    status = wait_for_pod(
        api,
        kube_namespace,
        "huge",
        lambda p: p["status"].get("phase") == "Failed",
        what="admission rejection",
    )["status"]
    assert status["reason"] == "OutOfcpu"
    assert status["message"] == (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 3000, "
        "used: 0, capacity: 2000"
    )


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_usage_is_served_as_cadvisor_and_kube_state_metrics(
    api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim_factory: Callable[..., KubeletSimulator],
    kube_namespace: str,
) -> None:
    sim = kubelet_sim_factory(kube_cluster, metrics_port=0)
    node = f"metrics-{kube_namespace}"
    sim.register_node(node, cpu="4", memory="8Gi")
    sim.set_usage(kube_namespace, "web", "app", UsageSeries.constant(0.5, 200 * Mi))
    manifest = pod_manifest(
        "web", node=node, requests={"cpu": "250m", "memory": "128Mi"}, limits={"memory": "256Mi"}
    )
    uid = start_pod(api, kube_namespace, manifest)["metadata"]["uid"]
    ids = {"namespace": kube_namespace, "pod": "web", "container": "app"}
    # cAdvisor's image and name (the containerd id): the Prometheus source drops
    # series without an image, as it must for pod cgroups and pause containers.
    cadvisor = {**ids, "image": "registry.k8s.io/pause:3.10", "name": fake_id(uid, "app", "0")}
    key = frozenset(cadvisor.items())
    first = scrape(sim.metrics_url)
    time.sleep(1.0)
    second = scrape(sim.metrics_url)
    cpu_first = first[("container_cpu_usage_seconds_total", key)]
    cpu_second = second[("container_cpu_usage_seconds_total", key)]
    assert 0.3 < cpu_second - cpu_first < 0.8  # 0.5 cores for ~1 s
    assert second[("container_memory_working_set_bytes", key)] == 200 * Mi
    ksm = {**ids, "uid": uid, "node": node}
    request_cpu = frozenset({**ksm, "resource": "cpu", "unit": "core"}.items())
    limit_memory = frozenset({**ksm, "resource": "memory", "unit": "byte"}.items())
    assert second[("kube_pod_container_resource_requests", request_cpu)] == 0.25
    assert second[("kube_pod_container_resource_limits", limit_memory)] == 256 * Mi
    restarts = frozenset({**ids, "uid": uid}.items())
    assert second[("kube_pod_container_status_restarts_total", restarts)] == 0


def test_the_simulator_writes_nothing_once_statuses_are_current(
    api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str
) -> None:
    node = f"quiet-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    start_pod(api, kube_namespace, pod_manifest("idle", node=node, requests={"cpu": "100m"}))
    kubelet_sim.wait_ticks(3)
    writes = kubelet_sim.status_writes
    kubelet_sim.wait_ticks(5)
    assert kubelet_sim.status_writes == writes
