"""Live metrics end to end: kubelet simulator -> real Prometheus scrape -> product source.

A real API server runs pods on a simulated node: `web` (app + a native sidecar proxy) with
usage known in advance, and `leaky`, whose memory outgrows its limit so the
simulator OOM-kills it every ~12 s, and `capped`, which wants 0.6 cores under a
0.2-core CPU limit, so the simulator throttles it as the kernel would. A real
Prometheus scrapes the simulator's /metrics every second; `load_prometheus_history`
and `tailor recommend --prometheus` must then give back exactly those numbers, that
OOM kill, and the CPU the limit held back (sized on unless --ignore-throttling).

CPU tolerance: the simulator advances its cpu counter at each loop pass
(`poll_interval` 0.1 s) while Prometheus stamps a sample with the scrape start,
so a counter value is older than its timestamp by 0 to one pass (0.1 s, plus
< 0.1 s of pass, lock and HTTP time on a loaded 2-core machine). The source
divides the counter increase between the last samples before two grid points,
>= 4 s apart at a 1 s scrape, so a window's average is off by at most
0.2 / 4 = 5 % (measured: < 0.4 %). Extrapolating like rate() would be off by up
to a scrape interval in 5 s (20 %). Memory is a gauge holding the exact
simulated bytes, so it must match exactly.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.prometheus import PrometheusSettings, load_prometheus_history
from tailor.cli.main import app
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kubelet_sim import KubeletSimulator, UsageSeries
from tests.cluster.podtools import create_pod, init_container, pod_manifest, wait_for_pod
from tests.cluster.prometheus import PrometheusFactory, PrometheusInstance
from tests.cluster.rawapi import Json, RawApi

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus]

Mi = 2**20
STEP = 5
WINDOWS = 3  # whole 5 s windows scraped before reading: ~15-20 s of scraping
CPU_TOLERANCE = 0.05  # relative, per window (see module docstring)
LEAK_LIMIT = 256 * Mi
CAP = 0.2
# (pod, container) -> (cores, memory peak per 5 s window, usage series)
SIMULATED: dict[tuple[str, str], tuple[float, int, UsageSeries]] = {
    ("web", "app"): (0.5, 200 * Mi, UsageSeries.constant(0.5, 200 * Mi)),
    # 3 s at 40 Mi, 3 s at 64 Mi: every 5 s window overlaps >= 2 s of the 64 Mi phase,
    # so at least one 1 s scrape sees it and the window's peak is 64 Mi.
    ("web", "proxy"): (0.25, 64 * Mi, UsageSeries((0.25,), (40 * Mi, 64 * Mi), 3.0, True)),
    # 100 Mi for 12 s, then 300 Mi > its 256 Mi limit: killed, restarted, again.
    ("leaky", "worker"): (0.1, 100 * Mi, UsageSeries((0.1,), (100 * Mi, 300 * Mi), 12.0)),
    # wants 0.6 cores, gets its 0.2-core limit: 0.4 cores throttled
    ("capped", "busy"): (CAP, 50 * Mi, UsageSeries.constant(0.6, 50 * Mi)),
}
HELD_BACK = {("capped", "busy"): 0.4}


def web_pod(node: str) -> Json:
    manifest = pod_manifest(
        "web",
        node=node,
        container="app",
        requests={"cpu": "500m", "memory": "256Mi"},
        limits={"memory": "512Mi"},
    )
    # a native sidecar: kube-state-metrics reports its requests and limits under the init
    # containers' names (kube_pod_init_container_resource_*), read with the app ones'
    manifest["spec"]["initContainers"] = [
        init_container("proxy", {"cpu": "250m", "memory": "64Mi"}, {"memory": "128Mi"})
    ]
    return manifest


# one-container pods: name -> (container, requests, limits)
SINGLE = {
    "leaky": ("worker", {"cpu": "100m", "memory": "128Mi"}, {"memory": "256Mi"}),
    "capped": ("busy", {"cpu": "200m", "memory": "64Mi"}, {"cpu": "200m", "memory": "128Mi"}),
}


def single_pod(node: str, name: str) -> Json:
    container, requests, limits = SINGLE[name]
    return pod_manifest(name, node=node, container=container, requests=requests, limits=limits)


@pytest.fixture
def scraped_cluster(
    kube_cluster: ControlPlane,
    kubelet_sim_factory: Callable[..., KubeletSimulator],
    kube_namespace: str,
    prometheus_server: PrometheusFactory,
) -> Iterator[PrometheusInstance]:
    """The pods running on the simulator, scraped for WINDOWS whole grid windows."""
    sim = kubelet_sim_factory(kube_cluster, metrics_port=0, poll_interval=0.1)
    node = f"live-{kube_namespace}"
    sim.register_node(node, cpu="4", memory="8Gi")
    for (pod, container), (_, _, series) in SIMULATED.items():
        sim.set_usage(kube_namespace, pod, container, series)
    with kube_cluster.api_client() as client:
        api = RawApi(client)
        for manifest in (web_pod(node), *(single_pod(node, name) for name in SINGLE)):
            create_pod(api, kube_namespace, manifest)
            name = manifest["metadata"]["name"]
            wait_for_pod(
                api,
                kube_namespace,
                name,
                lambda p: p["status"].get("phase") == "Running",
                what="Running",
            )
    target = urlsplit(sim.metrics_url).netloc
    instance = prometheus_server.start(scrape_targets=[target], scrape_interval="1s")
    try:
        instance.wait_for_scrape()
        # Every grid point from the next one on has a sample at or before it.
        first_grid = math.ceil(time.time() / STEP) * STEP
        time.sleep(max(0.0, first_grid + WINDOWS * STEP + 0.5 - time.time()))
        yield instance
    finally:
        prometheus_server.stop(instance)


def load(url: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    settings = PrometheusSettings(
        url=url, history=timedelta(minutes=2), step=timedelta(seconds=STEP), retries=0
    )
    return load_prometheus_history(settings)


def test_scraped_usage_reads_back_as_simulated_and_recommends(
    scraped_cluster: PrometheusInstance, kube_namespace: str
) -> None:
    """One scrape session (~20 s) checked through the library and through the CLI."""
    usage, events = load(scraped_cluster.url)
    check_usage(usage, kube_namespace)
    check_oom_events(events)
    check_cli_recommendation(scraped_cluster.url, kube_namespace)


def check_usage(usage: pd.DataFrame, namespace: str) -> None:
    assert set(usage["namespace"]) == {namespace}
    assert set(zip(usage["pod"], usage["container"], strict=True)) == set(SIMULATED)
    for (pod, container), (cores, peak, _) in SIMULATED.items():
        rows = usage[(usage["pod"] == pod) & (usage["container"] == container)]
        # The leaky worker's windows holding a restart have no cpu (counter reset).
        assert len(rows) >= (1 if pod == "leaky" else WINDOWS), (pod, container)
        errors = (rows["cpu"] / cores - 1).abs()
        print(f"{pod}/{container}: {len(rows)} windows, cpu error <= {errors.max():.2%}")
        assert errors.max() < CPU_TOLERANCE, (pod, container, rows["cpu"].tolist())
        assert rows["memory"].tolist() == [float(peak)] * len(rows), (pod, container)
        assert set(rows["workload"]) == {pod}  # bare pods: their own workload
        held_back = HELD_BACK.get((pod, container))
        if held_back is None:  # no CPU limit, or never reached
            assert (rows["cpu_throttled"].fillna(0) == 0).all(), (pod, container)
        else:
            held_errors = (rows["cpu_throttled"] / held_back - 1).abs()
            assert held_errors.max() < CPU_TOLERANCE, rows["cpu_throttled"].tolist()
    app_rows = usage[usage["container"] == "app"]
    assert set(app_rows["cpu_request"]) == {0.5}
    assert set(app_rows["memory_limit"]) == {512.0 * Mi}
    proxy_rows = usage[usage["container"] == "proxy"]
    assert set(proxy_rows["cpu_request"]) == {0.25}
    assert set(proxy_rows["memory_limit"]) == {128.0 * Mi}


def check_oom_events(events: pd.DataFrame) -> None:
    """A kill every ~12 s and >= 15 s of grid: at least one kill between grid points."""
    print(f"OOMKilled events: {events['timestamp'].dt.strftime('%H:%M:%S').tolist()}")
    assert not events.empty
    assert set(events["reason"]) == {"OOMKilled"}
    assert set(zip(events["pod"], events["container"], strict=True)) == {("leaky", "worker")}
    assert set(events["memory"]) == {float(LEAK_LIMIT)}  # the limit it was killed at


def check_cli_recommendation(url: str, namespace: str) -> None:
    args = ["recommend", "--prometheus", url, "--history", "2m", "--step", f"{STEP}s"]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    records: list[dict[str, Any]] = json.loads(result.stdout)
    by_container = {(r["workload"], r["container"]): r for r in records}
    assert set(by_container) == set(SIMULATED)
    assert {r["namespace"] for r in records} == {namespace}
    for key, (cores, peak, _) in SIMULATED.items():
        record = by_container[key]
        wanted = cores + HELD_BACK.get(key, 0.0)
        assert record["cpu"]["target"] >= wanted * (1 - CPU_TOLERANCE), key
        assert record["memory"]["target"] >= peak, key
    # The OOM kill at the 256 Mi limit lifts the worker above its limit.
    assert by_container[("leaky", "worker")]["memory"]["target"] > LEAK_LIMIT
    assert "throttled it in 100% of windows" in by_container[("capped", "busy")]["explanation"]
    assert "throttled" not in by_container[("web", "app")]["explanation"]  # the model's own
    # Upstream's view: usage alone, so the request stays about at the limit.
    ignored = CliRunner().invoke(app, [*args, "--format", "json", "--ignore-throttling"])
    assert ignored.exit_code == 0, ignored.output
    capped = next(r for r in json.loads(ignored.stdout) if r["workload"] == "capped")
    assert capped["cpu"]["target"] < (CAP + 0.4) / 2
    assert "throttled" not in capped["explanation"]
