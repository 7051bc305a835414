"""`make demo-cluster`: kube-tailor's three services on a real control plane, watched live.

    python -m tests.cluster.demo [--minutes N] [--plain] [--until-shown] [--state-dir DIR]

Starts the project's test control plane (etcd, kube-apiserver, controller-manager,
scheduler), kubelet-simulator nodes, a real Prometheus that serves four days of backfilled
history and scrapes the simulated nodes, and the three services as processes: `tailor
recommender --strategy forecast` (VPA status and the schedule), `tailor admission` (the
webhook, registered on the API server) and `tailor follow --vpa` (the in-place updater).
It then creates a small fleet with VPAs naming kube-tailor and shows, live, the VPAs'
recommendations and explanations, the pods (same UID across an in-place resize, and one
resize the kubelet Deferred until a job on its node ended, then applied) and the cluster's
Events, until Ctrl-C or `--minutes`; everything it started stops on the way out.

It lives beside the tests because it runs on the tests' real components (nothing here is
mocked); `tests/cluster/test_demo_cluster.py` runs a short version and asserts a resize.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from recommender.data.openmetrics import usage_to_openmetrics
from tailor.quantity import Quantity, cpu_cores, memory_bytes
from tests.cluster import toolchain
from tests.cluster.certs import CertificateAuthority
from tests.cluster.controlplane import ClusterOptions, ControlPlane, wait_for_default_namespace
from tests.cluster.crds import install_crds
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.kubelet_sim.usage import UsageSeries
from tests.cluster.processes import free_port
from tests.cluster.prometheus import PrometheusFactory, _ensure_binaries
from tests.cluster.rawapi import Json, RawApi

NAMESPACE = "demo"
SYSTEM = "kube-tailor"
SCHEDULE = f"{SYSTEM}/tailor-schedule"
Mi = 2**20
STEP = 300
STARTED = time.monotonic()
# The daily peak is now, whenever the demo runs: the fleet's web Deployment is over its
# request in the hour in force, so the recommender raises it at once and the updater
# resizes its pods in place within minutes instead of at the next hour's boundary.
PEAK_HOUR = (time.time() % 86400) / 3600


@dataclass(frozen=True)
class Workload:
    """One Deployment of the fleet: its history's shape and the VPA that names kube-tailor."""

    name: str
    replicas: int
    cpu_request: str
    memory_request: str
    mode: str
    cpu: tuple[float, float]  # (night, peak) cores of the daily cycle; equal: flat
    memory_mib: float
    memory_limit: str | None = None
    pdb_min_available: int | None = None
    leak_mib_per_minute: float = 0.0  # live memory growth: reaches the limit, OOM-killed
    pool: str = "main"  # the nodes it runs on (label kube-tailor.io/demo-pool)

    def cpu_at(self, seconds: np.ndarray) -> np.ndarray:
        hours = (seconds % 86400) / 3600
        cycle = np.clip(np.cos((hours - PEAK_HOUR) / 24 * 2 * np.pi), 0, None)
        return self.cpu[0] + (self.cpu[1] - self.cpu[0]) * cycle


FLEET = (
    Workload("web", 2, "500m", "512Mi", "InPlace", (0.1, 1.2), 300),
    Workload("batch", 1, "500m", "1Gi", "InPlaceOrRecreate", (0.05, 0.05), 200),
    Workload("leaky", 1, "100m", "200Mi", "InPlace", (0.05, 0.05), 150, "200Mi", None, 30.0),
    Workload("api", 3, "400m", "256Mi", "InPlaceOrRecreate", (0.08, 0.1), 120, None, 2),
    # alone on node-3 beside NIGHTLY_JOB: its growth is Deferred until the job finishes
    Workload("queue", 1, "500m", "256Mi", "InPlace", (0.1, 1.2), 150, pool="queue"),
)
POOL_LABEL = "kube-tailor.io/demo-pool"
# node-3 says 3 CPU in its Node status while its kubelet holds 1 back (a reservation raised,
# not reported yet): queue's growth (500m -> about 1.3) fits by the Node, so the updater
# resizes it, and not beside the job by the kubelet's count (1 + 1.3 > 2), so it is Deferred
QUEUE_NODE, QUEUE_NODE_CPU, QUEUE_NODE_KUBELET_CPU = "node-3", "3", "2"
NIGHTLY_JOB = "nightly-job"


def history(end: int, days: int) -> pd.DataFrame:
    """What the fleet used over the last `days`, one pod per workload, as kube-state-metrics
    and cAdvisor would have recorded it: the forecaster's days to learn from."""
    rng = np.random.default_rng(7)
    times = np.arange(end - days * 86400, end, STEP)
    frames: list[pd.DataFrame] = []
    for workload in FLEET:
        cpu = workload.cpu_at(times) + rng.normal(0, 0.01, times.size)
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": pd.to_datetime(times, unit="s", utc=True),
                    "namespace": NAMESPACE,
                    "workload": workload.name,
                    "pod": f"{workload.name}-5d8f7c9b4-old{len(frames)}",
                    "container": "app",
                    "cpu": np.clip(cpu, 0.01, None),
                    "memory": workload.memory_mib * Mi + rng.integers(0, 8 * Mi, times.size),
                    "cpu_request": cpu_cores(workload.cpu_request),
                    "memory_request": memory_bytes(workload.memory_request),
                    "cpu_limit": np.nan,
                    "memory_limit": memory_bytes(workload.memory_limit)
                    if workload.memory_limit
                    else np.nan,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def live_usage(workload: Workload, now: float) -> UsageSeries:
    """The usage a new container of `workload` plays from now: the cycle's current level,
    and for a leaking one memory that climbs a step a minute."""
    cpu = float(workload.cpu_at(np.array([now]))[0])
    if not workload.leak_mib_per_minute:
        return UsageSeries.constant(cpu, int(workload.memory_mib * Mi))
    memory = [int((workload.memory_mib + workload.leak_mib_per_minute * i) * Mi) for i in range(60)]
    return UsageSeries((cpu,), memory, step_seconds=60)


def manifests(workload: Workload) -> list[tuple[str, Json]]:
    """(collection, object) of the workload's Deployment, VPA and PodDisruptionBudget."""
    labels = {"app": workload.name}
    limits = {"memory": workload.memory_limit} if workload.memory_limit else {}
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {
            "requests": {"cpu": workload.cpu_request, "memory": workload.memory_request},
            **({"limits": limits} if limits else {}),
        },
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": workload.name},
        "spec": {
            "replicas": workload.replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], "nodeSelector": {POOL_LABEL: workload.pool}},
            },
        },
    }
    vpa = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": workload.name},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload.name},
            "recommenders": [{"name": "kube-tailor"}],
            "updatePolicy": {"updateMode": workload.mode},
        },
    }
    found = [
        (f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", deployment),
        (f"/apis/autoscaling.k8s.io/v1/namespaces/{NAMESPACE}/verticalpodautoscalers", vpa),
    ]
    if workload.pdb_min_available is not None:
        pdb = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": workload.name},
            "spec": {
                "minAvailable": workload.pdb_min_available,
                "selector": {"matchLabels": labels},
            },
        }
        found.append((f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets", pdb))
    return found


def nightly_job() -> Json:
    """A one-off pod on node-3 (no VPA) taking the room queue's growth needs, until it ends."""
    container = {
        "name": "job",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "1", "memory": "256Mi"}},
    }
    spec = {"containers": [container], "nodeName": QUEUE_NODE, "restartPolicy": "Never"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": NIGHTLY_JOB}, "spec": spec}


def resize_deferred(pod: Json) -> bool:
    """Whether the kubelet put off the pod's resize (PodResizePending, reason Deferred)."""
    return any(
        c.get("type") == "PodResizePending" and c.get("reason") == "Deferred"
        for c in pod.get("status", {}).get("conditions", [])
    )


def resize_applied(pod: Json) -> bool:
    """Whether the kubelet runs the pod at its spec's requests (nothing pending)."""
    wanted = pod["spec"]["containers"][0].get("resources", {}).get("requests", {})
    statuses = pod.get("status", {}).get("containerStatuses") or [{}]
    running = (statuses[0].get("resources") or {}).get("requests", {})
    same = {k: Quantity.parse(str(v)) for k, v in running.items()} == {
        k: Quantity.parse(str(v)) for k, v in wanted.items()
    }
    pending = any(c.get("type") == "PodResizePending" for c in pod["status"].get("conditions", []))
    return same and not pending


@dataclass
class Observed:
    """What the demo saw: pods by UID with the requests first seen, in-place resizes, and
    resizes the kubelet Deferred (then applied)."""

    first_requests: dict[str, tuple[str, str]] = field(default_factory=dict)
    resized: dict[str, tuple[str, tuple[str, str], tuple[str, str]]] = field(default_factory=dict)
    webhook_sized: set[str] = field(default_factory=set)
    deferred: dict[str, str] = field(default_factory=dict)  # uid -> the kubelet's message
    deferred_applied: set[str] = field(default_factory=set)
    started: float = field(default_factory=time.monotonic)
    first_resize_after: float | None = None

    def record(self, pods: list[Json]) -> None:
        for pod in pods:
            uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
            requests = pod["spec"]["containers"][0].get("resources", {}).get("requests", {})
            now = (str(requests.get("cpu")), str(requests.get("memory")))
            before = self.first_requests.setdefault(uid, now)
            if now != before and uid not in self.resized:
                self.resized[uid] = (name, before, now)
                if self.first_resize_after is None:
                    self.first_resize_after = time.monotonic() - self.started
            if (pod["metadata"].get("annotations") or {}).get("vpaUpdates"):
                self.webhook_sized.add(uid)
            if resize_deferred(pod) and uid not in self.deferred:
                found = pod["status"]["conditions"]
                why = [c.get("message", "") for c in found if c["type"] == "PodResizePending"]
                self.deferred[uid] = why[0]
            elif uid in self.deferred and resize_applied(pod):
                self.deferred_applied.add(uid)


class DemoCluster(contextlib.ExitStack):
    """Everything the demo starts, stopped in reverse order on exit (Ctrl-C included)."""

    def __init__(self, workdir: Path, nodes: int = 2) -> None:
        super().__init__()
        self.workdir, self.nodes = workdir, nodes
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.while_waiting: Callable[[], object] = lambda: None

    def start(self) -> tuple[RawApi, KubeletSimulator]:
        self.say("starting the control plane (etcd, kube-apiserver, controllers, scheduler)")
        options = ClusterOptions(controllers=True)
        plane = ControlPlane(
            self.workdir / "cluster",
            toolchain.control_plane_bin_dir(),
            toolchain.etcd_binary(),
            options,
        )
        plane.start()
        self.callback(plane.stop)
        wait_for_default_namespace(plane, timeout=120)
        self.plane = plane
        client = self.enter_context(plane.api_client())
        api = self.api = RawApi(client)
        install_crds(api)
        for namespace in (NAMESPACE, SYSTEM):
            api.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
        sim = KubeletSimulator(client, metrics_port=0, poll_interval=0.5).start()
        self.callback(sim.stop, raise_errors=False)
        for i in range(1, self.nodes + 1):
            sim.register_node(f"node-{i}", cpu="4", memory="8Gi", labels={POOL_LABEL: "main"})
        sim.register_node(
            QUEUE_NODE, cpu=QUEUE_NODE_CPU, memory="4Gi", labels={POOL_LABEL: "queue"}
        )
        sim.hold_back(QUEUE_NODE, cpu=QUEUE_NODE_KUBELET_CPU, memory="4Gi")
        self.say(f"{self.nodes + 1} simulated nodes ready")
        return api, sim

    def start_prometheus(self, sim: KubeletSimulator, days: int) -> str:
        prometheus, promtool = _ensure_binaries()
        factory = PrometheusFactory(self.workdir / "prometheus", prometheus, promtool)
        self.callback(factory.stop_all)
        end = int(time.time()) // STEP * STEP
        self.say(f"backfilling Prometheus with {days} days of the fleet's history")
        text = usage_to_openmetrics(history(end, days), step=STEP)
        target = urlsplit(sim.metrics_url).netloc
        instance = factory.start(text, scrape_targets=[target], scrape_interval="5s")
        return instance.url

    def start_services(self, prometheus_url: str) -> None:
        kubeconfig = str(self.plane.kubeconfig)
        ca = CertificateAuthority(self.workdir / "pki")
        ca_file = ca.folder / "ca.crt"
        ca_file.write_bytes(ca.cert_pem)
        serving = ca.issue(
            "webhook", common_name="tailor-admission", hosts=("127.0.0.1",), server=True
        )
        port = free_port()
        common = ["--kubeconfig", kubeconfig, "--metrics-port", "0"]
        services = {
            "recommender": [
                "recommender", "--prometheus", prometheus_url, "--strategy", "forecast",
                "--history", "4d", "--step", "5m", "--interval", "20s",
                "--schedule-configmap", SCHEDULE, "--ignored-vpa-object-namespaces", SYSTEM,
            ],
            "admission": [
                "admission", "--tls-cert", str(serving.cert_file),
                "--tls-key", str(serving.key_file), "--port", str(port),
                "--address", "127.0.0.1", "--register-webhook",
                "--ca-file", str(ca_file), "--webhook-url", f"https://127.0.0.1:{port}/mutate",
            ],
            "follow": [
                "follow", "--schedule-configmap", SCHEDULE, "--vpa", "--interval", "15s",
                "-n", NAMESPACE,
            ],
        }  # fmt: skip
        follow = services.pop("follow")
        for name, args in services.items():
            self.service(name, [*args, *common])
        create_fleet(self.api)
        self.say(
            "fleet created: web (daily cycle), batch, leaky (OOM-killed), api (with a PDB), "
            "queue (on node-3, whose kubelet holds back 1 CPU, beside nightly-job)"
        )
        self.say("waiting for the recommender's first pass (the schedule ConfigMap)")
        self.wait_for_schedule()
        self.service("follow", [*follow, *common])
        self.say(f"services started; logs in {self.logs}")

    def service(self, name: str, args: list[str]) -> None:
        """`tailor ARGS` from this checkout as its own process, stopped with SIGTERM (and
        killed if it has not exited 30 s later) when the demo ends."""
        log = (self.logs / f"{name}.log").open("w")
        environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        process = subprocess.Popen(
            [sys.executable, "-m", "tailor.cli.main", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
        )
        self.processes.append(process)

        def stop() -> None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()

        self.callback(stop)

    def wait_for_schedule(self, timeout: float = 600) -> None:
        namespace, name = SCHEDULE.split("/")
        path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                self.api.get(path)
                return
            self.while_waiting()
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a service exited early: see {self.logs}")
            time.sleep(2)
        raise TimeoutError(f"no schedule within {timeout:.0f} s: see {self.logs}")

    @staticmethod
    def say(text: str) -> None:
        print(f"demo-cluster: {text}", file=sys.stderr, flush=True)


def create_fleet(api: RawApi) -> None:
    for workload in FLEET:
        for collection, manifest in manifests(workload):
            api.create(collection, manifest)
    api.create(f"/api/v1/namespaces/{NAMESPACE}/pods", nightly_job())


def finish_nightly_job(api: RawApi) -> None:
    """The job ends (its pod goes): the kubelet retries the Deferred resize, which now fits."""
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{NIGHTLY_JOB}"
    api.request("DELETE", path, {"gracePeriodSeconds": 0})


def feed_usage(api: RawApi, sim: KubeletSimulator, seen: set[str]) -> list[Json]:
    """The fleet's pods; each new one gets its workload's live usage on the simulator."""
    pods = api.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    by_name = {w.name: w for w in FLEET}
    for pod in pods:
        workload = by_name.get((pod["metadata"].get("labels") or {}).get("app", ""))
        if workload and pod["metadata"]["uid"] not in seen:
            sim.set_usage(
                NAMESPACE, pod["metadata"]["name"], "app", live_usage(workload, time.time())
            )
            seen.add(pod["metadata"]["uid"])
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _table(title: str, *columns: str) -> Any:
    from rich.table import Table

    table = Table(title=title, expand=True)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _vpa_row(vpa: Json) -> list[str]:
    status = vpa.get("status") or {}
    recommended = (status.get("recommendation") or {}).get("containerRecommendations") or [{}]
    target = recommended[0].get("target", {})
    why = next(
        (c.get("message", "") for c in status.get("conditions", []) if c.get("message")),
        "waiting for the recommender's first pass",
    )
    mode = vpa["spec"]["updatePolicy"]["updateMode"]
    cpu, memory = str(target.get("cpu", "-")), str(target.get("memory", "-"))
    return [vpa["metadata"]["name"], mode, cpu, memory, why[:160]]


def _pod_row(pod: Json, observed: Observed) -> list[str]:
    uid = pod["metadata"]["uid"]
    requests = pod["spec"]["containers"][0].get("resources", {}).get("requests", {})
    restarts = sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses", []))
    change = observed.resized.get(uid)
    notes = ["webhook"] if uid in observed.webhook_sized else []
    if change:
        notes.append(f"in place: {'/'.join(change[1])} -> {'/'.join(change[2])}")
    if uid in observed.deferred_applied:
        notes.append("Deferred by the kubelet, then applied")
    elif uid in observed.deferred:
        notes.append(f"Deferred: {observed.deferred[uid]}")
    node = pod["spec"].get("nodeName", "-")
    cpu, memory = str(requests.get("cpu", "-")), str(requests.get("memory", "-"))
    return [pod["metadata"]["name"], uid[:8], node, cpu, memory, str(restarts), "; ".join(notes)]


def _event_row(event: Json) -> list[str]:
    involved = event["involvedObject"]
    when = (event.get("lastTimestamp") or event.get("eventTime") or "")[11:19]
    subject = f"{involved['kind'].lower()}/{involved['name']}"
    return [when, event.get("type", ""), event.get("reason", ""), subject, event["message"][:120]]


def view(api: RawApi, pods: list[Json], observed: Observed) -> Any:
    """One frame of the live view: VPAs, pods and the latest Events."""
    from rich.console import Group

    vpas = _table("VerticalPodAutoscalers", "VPA", "mode", "cpu", "memory", "explanation")
    found = api.get(f"/apis/autoscaling.k8s.io/v1/namespaces/{NAMESPACE}/verticalpodautoscalers")
    for vpa in found["items"]:
        vpas.add_row(*_vpa_row(vpa))
    columns = ("pod", "uid", "node", "cpu req", "memory req", "restarts", "sized / resized")
    table = _table("Pods (an in-place resize keeps the UID)", *columns)
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        table.add_row(*_pod_row(pod, observed))
    events = _table("Events (kubectl get events)", "time", "type", "reason", "object", "message")
    happened = api.get(f"/api/v1/namespaces/{NAMESPACE}/events")["items"]
    happened.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "", reverse=True)
    for event in happened[:8]:
        events.add_row(*_event_row(event))
    return Group(vpas, table, events)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live

    workdir = args.state_dir or Path(tempfile.mkdtemp(prefix="kube-tailor-demo-"))
    observed = Observed()
    seen: set[str] = set()
    deadline = math.inf if args.minutes is None else time.monotonic() + args.minutes * 60
    with DemoCluster(workdir) as demo:
        api, sim = demo.start()
        prometheus_url = demo.start_prometheus(sim, days=4)
        demo.while_waiting = lambda: feed_usage(api, sim, seen)  # usage for the new pods
        demo.start_services(prometheus_url)
        observed.started = time.monotonic()
        console = Console(stderr=False)
        scaled = job_done = released = False
        live = Live(console=console, refresh_per_second=1, transient=args.plain)
        with live, contextlib.suppress(KeyboardInterrupt):
            while time.monotonic() < deadline:
                pods = feed_usage(api, sim, seen)
                observed.record(pods)
                if not scaled and observed.resized:
                    scale_api_up(api)  # a new pod, sized by the webhook
                    scaled = True
                if not job_done and observed.deferred:
                    time.sleep(5)  # a moment to see it Deferred in the live view
                    finish_nightly_job(api)
                    job_done = True
                if not released and observed.deferred_applied:  # node-3's status catches up
                    sim.update_node_allocatable(QUEUE_NODE, cpu=QUEUE_NODE_CPU, memory="4Gi")
                    released = True
                if not args.plain:
                    live.update(view(api, pods, observed))
                shown = observed.resized and observed.webhook_sized and observed.deferred_applied
                if args.until_shown and shown:
                    break
                time.sleep(2)
        report(observed)
    if not args.state_dir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if observed.resized else 1


def scale_api_up(api: RawApi) -> None:
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/api/scale"
    scale = api.get(path)
    scale["spec"]["replicas"] += 1
    api.request("PUT", path, scale)


def report(observed: Observed) -> None:
    print(f"in-place resizes seen: {len(observed.resized)}")
    for name, before, after in observed.resized.values():
        print(f"  {name}: cpu/memory {before[0]}/{before[1]} -> {after[0]}/{after[1]} (same UID)")
    if observed.first_resize_after is not None:
        since_command = observed.started - STARTED + observed.first_resize_after
        print(f"first resize {observed.first_resize_after:.0f} s after the services started,")
        print(f"{since_command:.0f} s after the command started")
    print(f"ran {time.monotonic() - STARTED:.0f} s in all")
    print(f"pods sized by the webhook at creation: {len(observed.webhook_sized)}")
    print(f"resizes Deferred by the kubelet, then applied: {len(observed.deferred_applied)}")
    for uid, message in observed.deferred.items():
        pod = observed.resized[uid][0] if uid in observed.resized else uid
        outcome = "applied once nightly-job ended" if uid in observed.deferred_applied else "still"
        print(f"  {pod}: {message} ({outcome})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.demo")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long")
    parser.add_argument("--plain", action="store_true", help="no live view, only the report")
    parser.add_argument("--state-dir", type=Path, default=None, help="keep state and logs here")
    parser.add_argument(
        "--until-shown",
        action="store_true",
        help="stop once a pod was resized in place, one Deferred then applied, and a new one "
        "sized by the webhook",
    )
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
