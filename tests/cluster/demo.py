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
from pathlib import Path
from urllib.parse import urlsplit

from recommender.data.openmetrics import usage_to_openmetrics
from tailor.schedule_file import SCHEDULE_KEY
from tests.cluster import toolchain
from tests.cluster.certs import CertificateAuthority
from tests.cluster.controlplane import ClusterOptions, ControlPlane, wait_for_default_namespace
from tests.cluster.crds import install_crds
from tests.cluster.demo_fleet import (
    NAMESPACE,
    POOL_LABEL,
    QUEUE_NODE,
    QUEUE_NODE_CPU,
    QUEUE_NODE_KUBELET_CPU,
    SCHEDULE,
    STEP,
    SYSTEM,
    create_fleet,
    feed_usage,
    finish_nightly_job,
    history,
    scale_api_up,
)
from tests.cluster.demo_view import Observed, view
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.processes import free_port
from tests.cluster.prometheus import PrometheusFactory, _ensure_binaries
from tests.cluster.rawapi import RawApi

STARTED = time.monotonic()


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
        # an empty plan until the recommender's first pass, so the updater (which refuses to
        # start on a schedule it cannot read) starts with the others, not a minute later
        home, schedule = SCHEDULE.split("/")
        empty = {"metadata": {"name": schedule}, "data": {SCHEDULE_KEY: "[]"}}
        self.api.create(f"/api/v1/namespaces/{home}/configmaps", empty)
        for name, args in services.items():
            self.service(name, [*args, *common])
        create_fleet(self.api)
        self.say(
            "fleet created: web (daily cycle), batch, leaky (OOM-killed), api (with a PDB), "
            "queue (on node-3, whose kubelet holds back 1 CPU, beside nightly-job)"
        )
        self.say("waiting for the recommender's first pass (the schedule ConfigMap)")
        self.wait_for_schedule()
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
                if self.api.get(path)["data"][SCHEDULE_KEY] != "[]":
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
        job_done = released = False
        scaled: list[float] = []  # when api was scaled up
        live = Live(console=console, refresh_per_second=1, transient=args.plain)
        with live, contextlib.suppress(KeyboardInterrupt):
            while time.monotonic() < deadline:
                pods = feed_usage(api, sim, seen)
                observed.record(pods)
                # a new pod, sized by the webhook; again (3 at most) if the webhook's workers
                # were not serving yet, or had not yet seen the recommendation, when it came
                due = not scaled or time.monotonic() - scaled[-1] > 20
                if observed.resized and not observed.webhook_sized and due and len(scaled) < 3:
                    scale_api_up(api)
                    scaled.append(time.monotonic())
                if not released and observed.deferred_applied:  # node-3's status catches up
                    sim.update_node_allocatable(QUEUE_NODE, cpu=QUEUE_NODE_CPU, memory="4Gi")
                    released = True
                if not args.plain:
                    live.update(view(api, pods, observed))
                if not job_done and observed.deferred:  # after a frame showed it Deferred
                    finish_nightly_job(api)
                    job_done = True
                shown = observed.resized and observed.webhook_sized and observed.deferred_applied
                if args.until_shown and shown:
                    break
                time.sleep(2)
        report(observed)
    if not args.state_dir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if observed.resized else 1


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
