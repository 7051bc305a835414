"""Memory pressure end to end: kubelet simulator -> real Prometheus -> `tailor follow`.

Two namespaces run the same Deployment under the same VPA (InPlace, maxAllowed memory
300Mi, a recommendation the pod is within): one container whose working set climbs
2 MiB/s from 190Mi towards and past its 256Mi limit, stalling more and more in reclaim
as the simulator's PSI model says. A real Prometheus scrapes the simulator every
second; `tailor follow --recommendations` runs about every second in both namespaces,
with the memory-pressure reaction in one only (a 6 s window: the test's clock, not the
2 min default). The reacting one is raised in place (to maxAllowed) before it reaches
its limit and is never killed; the other is OOM-killed when it crosses 256Mi. The
recommender's Prometheus source then reads both episodes back as OOM-like events, and
its model gives the raised container at least the memory the raise gave it.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from recommender.data.prometheus import PrometheusSettings, load_prometheus_history
from recommender.recommend import recommend_vpa
from tailor.cli.main import app
from tailor.memory_pressure import MEMORY_PRESSURE, PressureRule
from tailor.quantity import Quantity
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import create_namespace, namespace_name
from tests.cluster.kubelet_sim import KubeletSimulator, UsageSeries
from tests.cluster.prometheus import PrometheusFactory, PrometheusInstance
from tests.cluster.rawapi import MERGE_PATCH, Json, RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import (
    create_deployment,
    deployment,
    running_pods,
    vpa,
    vpa_collection,
    wait_for_running,
)

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus]

Mi = 2**20
START, RATE, TOP = 190, 2, 270  # MiB, MiB per second, MiB held from then on
LIMIT = 256 * Mi
CLIMB = UsageSeries((0.1,), tuple(m * Mi for m in range(START, TOP + 1, RATE)), 1.0)
KILLED_AFTER = (256 - START) / RATE  # seconds from the start to crossing the limit: 33
RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
POLICY = {"containerName": "*", "maxAllowed": {"memory": "300Mi"}}
WITHIN = {  # the pod's 100m / 128Mi are inside these bounds: upstream's rules leave it
    "containerName": "app",
    "lowerBound": {"cpu": "50m", "memory": "100Mi"},
    "target": {"cpu": "100m", "memory": "128Mi"},
    "upperBound": {"cpu": "200m", "memory": "200Mi"},
}


@dataclass(frozen=True)
class Scene:
    api: RawApi
    cluster: ControlPlane
    prometheus: PrometheusInstance
    reacting: str  # namespaces
    control: str


@pytest.fixture
def scene(
    kube_cluster_full: ControlPlane,
    kubelet_sim_factory: Callable[..., KubeletSimulator],
    prometheus_server: PrometheusFactory,
    request: pytest.FixtureRequest,
) -> Iterator[Scene]:
    sim = kubelet_sim_factory(kube_cluster_full, metrics_port=0, poll_interval=0.1)
    instance = prometheus_server.start(
        scrape_targets=[urlsplit(sim.metrics_url).netloc], scrape_interval="1s"
    )
    base = namespace_name(request.node.name)[:50]
    names = (f"{base}-r", f"{base}-c")
    node = f"psi-{base}"
    sim.register_node(node, cpu="4", memory="8Gi", labels={"tailor-test": node})
    with kube_cluster_full.api_client() as client:
        api = RawApi(client)
        install_crds(api)
        try:
            for namespace in names:
                create_namespace(api, namespace)
                sim.set_usage(namespace, "web-*", "app", CLIMB)
                api.create(
                    vpa_collection(namespace), vpa("web", "web", mode="InPlace", policy=POLICY)
                )
                status = {"status": {"recommendation": {"containerRecommendations": [WITHIN]}}}
                api.patch(f"{vpa_collection(namespace)}/web/status", status, MERGE_PATCH)
            instance.wait_for_scrape()
            for namespace in names:
                create_deployment(api, namespace, deployment("web", node, RESOURCES))
            yield Scene(api, kube_cluster_full, instance, *names)
        finally:
            prometheus_server.stop(instance)
            for namespace in names:
                with contextlib.suppress(Exception):
                    api.delete(f"/api/v1/namespaces/{namespace}")


def follow(scene: Scene, namespace: str, *flags: str) -> Json:
    config = str(scene.cluster.kubeconfig)
    args = ["follow", "--once", "--recommendations", "--format", "json", "--kubeconfig", config]
    result = CliRunner().invoke(app, [*args, "--namespace", namespace, *flags])
    assert result.exit_code == 0, result.output
    [outcome] = json.loads(result.stdout)
    return dict(outcome)


def container_state(api: RawApi, namespace: str) -> tuple[Json, Json]:
    """The pod's app container: (spec resources, status)."""
    [pod] = running_pods(api, namespace)
    return pod["spec"]["containers"][0]["resources"], pod["status"]["containerStatuses"][0]


def test_pressure_raises_memory_in_place_before_the_kill_that_ends_the_same_pod_without(
    scene: Scene,
) -> None:
    api = scene.api
    wait_for_running(api, scene.reacting, 1)
    wait_for_running(api, scene.control, 1)
    started = time.monotonic()
    reacting = [
        *("--memory-pressure-prometheus", scene.prometheus.url),
        *("--memory-pressure-window", "6s"),
    ]
    raised: Json | None = None
    raised_after = 0.0
    killed_after = None
    while time.monotonic() - started < KILLED_AFTER + 20:
        outcome = follow(scene, scene.reacting, *reacting)
        if outcome["action"] == "resize" and raised is None:
            raised, raised_after = outcome, time.monotonic() - started
        assert follow(scene, scene.control)["action"] == "none"
        _, status = container_state(api, scene.control)
        if killed_after is None and status["restartCount"] > 0:
            killed_after = time.monotonic() - started
        if raised is not None and killed_after is not None:
            break
        time.sleep(0.5)

    assert raised is not None, "never raised"
    print(f"raised after {raised_after:.1f} s: {raised['detail']}")
    print(f"control OOM-killed after {killed_after} s (crosses 256Mi at {KILLED_AFTER:.0f} s)")
    assert raised["applied"] and raised["detail"].startswith("memory pressure (app stalled ")
    assert "capped to maxAllowed" in raised["detail"]  # 334Mi wanted, 300Mi allowed
    assert raised_after < KILLED_AFTER
    resources, status = container_state(api, scene.reacting)
    assert Quantity.parse(resources["requests"]["memory"]) == Quantity.parse("300Mi")
    assert Quantity.parse(resources["limits"]["memory"]) == Quantity.parse("600Mi")  # 2x
    assert killed_after is not None, "the control pod was never killed"
    _, killed = container_state(api, scene.control)
    assert killed["lastState"]["terminated"]["reason"] == "OOMKilled"

    # past the old limit: the raised one runs on, the raise held against its VPA's 128Mi
    time.sleep(max(0.0, KILLED_AFTER + 3 - (time.monotonic() - started)))
    after = follow(scene, scene.reacting, *reacting)
    assert after["action"] == "none", after
    resources, status = container_state(api, scene.reacting)
    assert status["restartCount"] == 0, status
    assert not (status.get("lastState") or {}).get("terminated"), status
    assert Quantity.parse(status["resources"]["limits"]["memory"]) == Quantity.parse("600Mi")
    [sample] = scene.prometheus.query(
        f'container_memory_working_set_bytes{{namespace="{scene.reacting}",container="app"}}'
    )
    assert float(sample["value"][1]) > LIMIT  # above the limit it started with
    check_recommender_remembers(scene)


def check_recommender_remembers(scene: Scene) -> None:
    """The history read back: each climb one pressure episode (before the kill, for the
    control), the kill an OOMKilled event; the model keeps the raised memory."""
    settings = PrometheusSettings(
        url=scene.prometheus.url,
        history=timedelta(minutes=2),
        step=timedelta(seconds=3),
        retries=0,
        # one 3 s step per window: the history's windows are aligned to its grid, so a
        # 6 s one (two steps) can end up to 3 s before the raise and average below the
        # 10 % the live reader saw on a rising ramp; the last 3 s before it do not
        memory_pressure=PressureRule(window=timedelta(seconds=3)),
    )

    def read_back() -> tuple[Any, Any, list[tuple[str, str]]] | None:
        """The history once the control's kill is in it: the restart counter shows it at
        Prometheus's next scrape after the kill, seconds later on a loaded machine."""
        usage, events = load_prometheus_history(settings)
        in_time = events.sort_values("timestamp", kind="stable")  # events come sorted; said here
        seen = list(zip(in_time["namespace"], in_time["reason"], strict=True))
        killed = "OOMKilled" in [reason for namespace, reason in seen if namespace == scene.control]
        return (usage, events, seen) if killed else None

    usage, events, seen = wait_until(read_back, timeout=60, interval=2, what="the kill read back")
    print(f"events: {seen}")
    assert [reason for namespace, reason in seen if namespace == scene.reacting] == [
        MEMORY_PRESSURE
    ]
    # the control's climb: pressure, then the kill (its restarted climb may have begun again)
    assert [reason for namespace, reason in seen if namespace == scene.control][:2] == [
        MEMORY_PRESSURE,
        "OOMKilled",
    ]
    [reached] = events.loc[events["namespace"] == scene.reacting, "memory"].tolist()
    assert 220 * Mi < reached < LIMIT  # the working set it had reached
    mine = usage[usage["namespace"] == scene.reacting]
    [remembered] = recommend_vpa(mine, events)["memory_target"].tolist()
    [forgotten] = recommend_vpa(mine)["memory_target"].tolist()
    print(f"memory target with the episode {remembered / Mi:.0f}Mi, without {forgotten / Mi:.0f}Mi")
    assert remembered >= reached + 100 * Mi > forgotten  # the OOM bump, kept
