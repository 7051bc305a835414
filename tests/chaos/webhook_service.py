"""The webhook as the chaos cases attack it: `tailor admission` (its workers included) as its
own process, reading a control plane of its own (so it can be frozen without touching
other tests), with the objects of a burst (`tests.admission.burst`)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.admission.burst import populate
from tests.admission.https import call, serving_pair
from tests.cluster import toolchain
from tests.cluster.certs import CertificateAuthority
from tests.cluster.controlplane import ControlPlane, wait_for_default_namespace
from tests.cluster.crds import install_crds
from tests.cluster.processes import TailorProcess, free_port, tailor_process
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until

APPS = 5


@contextlib.contextmanager
def own_control_plane(folder: Path) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver for one chaos module, holding the burst's objects."""
    try:
        binaries = toolchain.control_plane_bin_dir()
    except toolchain.ToolMissing as error:
        if toolchain.on_ci():
            pytest.fail(f"CI must run the chaos suite: {error}", pytrace=False)
        pytest.skip(str(error))
    plane = ControlPlane(folder, binaries, toolchain.etcd_binary())
    plane.start()
    try:
        wait_for_default_namespace(plane)
        api = RawApi(plane.api_client())
        install_crds(api)
        populate(api, APPS)
        yield plane
    finally:
        plane.stop()


def apiserver_pid(plane: ControlPlane) -> int:
    [process] = [p for p in plane.processes if p.name == "kube-apiserver"]
    return process.pid


@dataclass
class Service:
    """A running `tailor admission`: where it listens, the CA that trusts it, its process."""

    port: int
    metrics_port: int
    ca: CertificateAuthority
    running: TailorProcess

    @property
    def rss(self) -> int:
        """Resident bytes of the service and its workers."""
        parent = psutil.Process(self.running.process.pid)
        total = 0
        for process in (parent, *parent.children(recursive=True)):
            with contextlib.suppress(psutil.Error):
                total += process.memory_info().rss
        return total

    def review(self, body: bytes, timeout: float = 30.0) -> tuple[int, float, dict[str, Any]]:
        """(status, seconds, response or {}) of one review on a new TLS connection."""
        context = ssl.create_default_context(cafile=str(self.ca.pair.cert_file))
        begun = time.monotonic()
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=timeout)
        try:
            conn.request("POST", "/mutate", body, {"Content-Type": "application/json"})
            answer = conn.getresponse()
            text = answer.read()
        finally:
            conn.close()
        seconds = time.monotonic() - begun
        response = json.loads(text).get("response", {}) if answer.status == 200 else {}
        return answer.status, seconds, response

    def reviews_counted(self) -> dict[str, float]:
        """tailor_admission_reviews_total by outcome, from its /metrics."""
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        counted = {}
        for line in text.splitlines():
            if line.startswith("tailor_admission_reviews_total{"):
                outcome = line.split('outcome="')[1].split('"')[0]
                counted[outcome] = float(line.rsplit(" ", 1)[1])
        return counted


@contextlib.contextmanager
def admission_service(plane: ControlPlane, folder: Path) -> Iterator[Service]:
    """`tailor admission` with its shipped defaults, once /healthz answers."""
    ca, pair = serving_pair(folder)
    port, metrics_port = free_port(), free_port()
    command = [
        "admission", "--tls-cert", str(pair.cert_file), "--tls-key", str(pair.key_file),
        "--port", str(port), "--address", "127.0.0.1", "--metrics-port", str(metrics_port),
        "--kubeconfig", str(plane.kubeconfig), "--status-lease", "default/tailor-admission",
    ]  # fmt: skip
    with tailor_process(command, folder / "admission.log") as running:

        def healthy() -> bool:
            try:
                return call(f"https://127.0.0.1:{port}/healthz", ca) == (200, "ok\n")
            except OSError:
                return False

        wait_until(healthy, timeout=120, interval=0.5, what="tailor admission's /healthz")
        yield Service(port, metrics_port, ca, running)


def write_figures(name: str, figures: dict[str, Any]) -> None:
    """The measured figures, printed and, under `make chaos`, kept in $TAILOR_CHAOS_OUT."""
    text = json.dumps(figures, indent=2)
    print(f"\n{name}: {text}")
    folder = os.environ.get("TAILOR_CHAOS_OUT")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(text + "\n")
