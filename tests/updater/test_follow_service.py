"""`tailor follow` as operators run it: evicting behind PodDisruptionBudgets, and as a service."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from tailor.status_lease import STATUS_LEASE
from tests.cluster.controlplane import ControlPlane
from tests.cluster.fixtures import FullNamespace
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.podtools import applied_requests, get_pod, pod_manifest
from tests.cluster.processes import SERVICE_BOUND, free_port, tailor_process
from tests.cluster.prometheus import PrometheusFactory
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import (
    Mi,
    create_deployment,
    deployment,
    running_pods,
    wait_for_running,
)
from tests.updater.following import (
    NO_WEBHOOK,
    follow,
    period,
    pinned_deployment,
    start,
    wait_until_infeasible,
    webhook_renewed,
    write_schedule,
)


def budget(name: str) -> Json:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": name}}},
    }


def test_a_stuck_pod_is_evicted_only_where_its_disruption_budget_allows(
    full_namespace: FullNamespace,
    tmp_path: Path,
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    [first] = pinned_deployment(full_namespace, "evict", 1)
    api.create(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets", budget("web"))
    schedule = write_schedule(tmp_path / "s.json", [period(namespace, "web", 2.0, 128 * Mi)])

    [sent] = follow(full_namespace.cluster, schedule)
    assert (sent["workload"], sent["action"]) == ("web", "resize")
    name = first["metadata"]["name"]
    wait_until_infeasible(api, namespace, [first])

    # upstream's default: a controller with a single live replica is never evicted from
    [kept] = follow(full_namespace.cluster, schedule, "--evict")
    assert kept["action"] == "none"
    assert kept["detail"].endswith("has 1 live replica(s), fewer than min replicas 2")

    refusing = ["--evict", "--min-replicas", "1", NO_WEBHOOK]
    [refused] = follow(full_namespace.cluster, schedule, *refusing)
    assert (refused["action"], refused["applied"]) == ("evict", False)
    assert refused["detail"].startswith("eviction refused (429)")
    assert get_pod(api, namespace, name)["metadata"].get("deletionTimestamp") is None

    api.delete(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web")
    # upstream's --use-admission-controller-status: no eviction while the webhook is down
    lease = f"--admission-status-lease={namespace}/{STATUS_LEASE}"
    [waiting] = follow(full_namespace.cluster, schedule, "--evict", "--min-replicas", "1", lease)
    assert waiting["action"] == "none"
    assert waiting["detail"].endswith(
        f"not evicted: the webhook's status Lease {namespace}/{STATUS_LEASE} does not exist: "
        "the replacement would come back unsized "
        "(--no-use-admission-controller-status evicts anyway)"
    )
    assert get_pod(api, namespace, name)["metadata"].get("deletionTimestamp") is None
    lease = webhook_renewed(full_namespace.cluster, namespace)
    [evicted] = follow(full_namespace.cluster, schedule, "--evict", "--min-replicas", "1", lease)
    assert (evicted["action"], evicted["applied"]) == ("evict", True)
    assert evicted["detail"].startswith("evicted: resize Infeasible")
    replaced = wait_until(
        lambda: [p for p in running_pods(api, namespace) if p["metadata"]["name"] != name],
        timeout=30,
        what="replacement replica",
    )
    assert len(replaced) == 1


def test_one_pass_evicts_no_more_than_the_eviction_tolerance_of_a_deployment(
    full_namespace: FullNamespace,
    tmp_path: Path,
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    pods = pinned_deployment(full_namespace, "tolerance", 4)
    schedule = write_schedule(tmp_path / "s.json", [period(namespace, "web", 2.0, 128 * Mi)])
    first = follow(full_namespace.cluster, schedule)
    assert {o["action"] for o in first} == {"resize"}, first
    wait_until_infeasible(api, namespace, pods)
    outcomes = follow(full_namespace.cluster, schedule, "--evict", NO_WEBHOOK)
    evicted = [o for o in outcomes if o["action"] == "evict" and o["applied"]]
    kept = [o for o in outcomes if o["action"] == "none"]
    assert (len(evicted), len(kept)) == (2, 2)  # int(4 x 0.5): upstream's default tolerance
    assert all("2 of 4 replicas already evicted this pass" in o["detail"] for o in kept)


def test_the_eviction_rate_limit_leaves_the_rest_for_a_later_pass(
    full_namespace: FullNamespace,
    tmp_path: Path,
) -> None:
    """Upstream's --eviction-rate-limit / --eviction-rate-burst: 3 pods may go under the
    tolerance (1.0), one token is there."""
    api, namespace = full_namespace.api, full_namespace.name
    pods = pinned_deployment(full_namespace, "rate", 3)
    schedule = write_schedule(tmp_path / "s.json", [period(namespace, "web", 2.0, 128 * Mi)])
    assert {o["action"] for o in follow(full_namespace.cluster, schedule)} == {"resize"}
    wait_until_infeasible(api, namespace, pods)
    limits = ["--eviction-tolerance", "1", "--eviction-rate-limit", "0.001"]
    outcomes = follow(full_namespace.cluster, schedule, "--evict", NO_WEBHOOK, *limits)
    evicted = [o for o in outcomes if o["action"] == "evict" and o["applied"]]
    waiting = [o for o in outcomes if o["action"] == "none"]
    assert (len(evicted), len(waiting)) == (1, 2), outcomes
    assert all(
        o["detail"].endswith(
            "not evicted: eviction rate limit reached (0.001 per second, burst 1); "
            "left for a later pass"
        )
        for o in waiting
    )


def test_a_growth_without_room_waits_as_deferred_and_one_past_the_node_goes_at_once(
    full_namespace: FullNamespace,
    tmp_path: Path,
) -> None:
    """With --evict, a growth our node check finds no room for is judged as the kubelet
    would: beside its neighbours it waits --deferred-timeout (a neighbour may leave), past
    the whole node it is evicted at once."""
    api, namespace, cluster = full_namespace.api, full_namespace.name, full_namespace.cluster
    node = f"room-{namespace}"
    full_namespace.sim.register_node(node, cpu="2", memory="8Gi", labels={"tailor-test": node})
    web = deployment("web", node, {"requests": {"cpu": "250m", "memory": "64Mi"}}, replicas=2)
    create_deployment(api, namespace, web)
    wait_for_running(api, namespace, 2)
    start(api, namespace, pod_manifest("filler", node=node, requests={"cpu": "1"}))
    # a core each: 750m free beside either replica, though either fits the node alone
    schedule = write_schedule(tmp_path / "s.json", [period(namespace, "web", 1.0, 64 * Mi)])
    outcomes = follow(cluster, schedule, "--evict", NO_WEBHOOK)
    assert [o["action"] for o in outcomes] == ["wait", "wait"], outcomes
    assert all(
        o["detail"].startswith(f"does not fit node {node}: cpu needs 1000, 750 free")
        and o["detail"].endswith("waiting up to 0:05:00 for room")
        for o in outcomes
    )
    assert len(running_pods(api, namespace)) == 3  # nobody evicted

    # a second node of the same label, where the larger replacements can land: the updater
    # evicts only for a replacement that fits some node
    spare = f"spare-{namespace}"[:63]
    full_namespace.sim.register_node(spare, cpu="8", memory="8Gi", labels={"tailor-test": node})
    command = ["follow", "--schedule", str(schedule), "--kubeconfig", str(cluster.kubeconfig)]
    flags = ["--interval", "1s", "--deferred-timeout", "3s", "--evict", NO_WEBHOOK]
    log = tmp_path / "follow.log"
    with tailor_process([*command, *flags], log):
        wait_until(
            lambda: "evict: evicted: does not fit node" in log.read_text(), timeout=SERVICE_BOUND
        )
    text = log.read_text()
    assert text.index("waiting up to 0:00:03 for room") < text.index("evict: evicted:")
    waited = text.split("evict: evicted: ")[1].split(" for ")[1].split()[0]
    assert waited >= "0:00:03", text  # h:mm:ss sorts as text

    wait_for_running(api, namespace, 3)  # the replacement runs
    huge = write_schedule(tmp_path / "h.json", [period(namespace, "web", 3.0, 64 * Mi)])
    outcomes = follow(cluster, huge, "--evict", NO_WEBHOOK)
    evicted = [o for o in outcomes if o["action"] == "evict" and o["applied"]]
    assert len(evicted) == 1, outcomes  # int(2 x 0.5): upstream's default tolerance
    assert evicted[0]["detail"].startswith(
        f"evicted: never fits node {node}: cpu needs 3000, 2000 allocatable"
    )


@pytest.mark.prometheus
def test_the_service_follows_the_file_and_survives_a_broken_rewrite(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    prometheus_server: PrometheusFactory,
    tmp_path: Path,
) -> None:
    node = f"svc-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    start(kube_api, kube_namespace, pod_manifest("web", node=node, requests={"cpu": "250m"}))
    schedule = write_schedule(tmp_path / "s.json", [period(kube_namespace, "web", 0.5, 64 * Mi)])
    command = [
        "follow",
        "--schedule",
        str(schedule),
        "--kubeconfig",
        str(kube_cluster.kubeconfig),
        "--interval",
        "1s",
        "--metrics-port",
        str(port := free_port()),
    ]
    # a real Prometheus scrapes the service's own metrics, as an operator's would
    scraper = prometheus_server.start(scrape_targets=[f"127.0.0.1:{port}"])
    log = tmp_path / "follow.log"
    with tailor_process(command, log) as service:
        wait_until(
            lambda: applied_requests(get_pod(kube_api, kube_namespace, "web"))["cpu"] == "500m",
            timeout=SERVICE_BOUND,
            what="first period applied",
        )
        schedule.write_text("[{", encoding="utf-8")
        wait_until(
            lambda: "keeping the last good schedule" in log.read_text(),
            timeout=SERVICE_BOUND,
            what="error",
        )
        write_schedule(schedule, [period(kube_namespace, "web", 0.75, 64 * Mi)])
        wait_until(
            lambda: applied_requests(get_pod(kube_api, kube_namespace, "web"))["cpu"] == "750m",
            timeout=SERVICE_BOUND,
            what="rewritten period applied",
        )
        resized = 'tailor_updater_pods_total{action="resize",applied="true"}'
        wait_until(
            lambda: [r for r in scraper.query(resized) if float(r["value"][1]) >= 2],
            timeout=SERVICE_BOUND,
            what="both resizes counted in Prometheus",
        )
        [passes] = scraper.query('tailor_updater_passes_total{outcome="ok"}')
        assert float(passes["value"][1]) >= 2
        assert (
            scraper.query('tailor_updater_passes_total{outcome="failed"}')[0]["value"][1] == "0"
        )  # a broken schedule file keeps the last one: the pass still finishes
        health = urllib.request.urlopen(f"http://127.0.0.1:{port}/health-check", timeout=5)
        assert health.status == 200
        assert service.process.poll() is None
    assert service.code == 0, service.output()
    assert "web resize: app: cpu 500m" in log.read_text()
