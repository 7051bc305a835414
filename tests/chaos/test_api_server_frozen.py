"""`tailor recommender` and `tailor follow` while their API server is frozen (SIGSTOP).

The API server accepts connections (the kernel queues them) and never answers. Each call
now gives up after the read timeout (10 s at a 4 s interval) instead of waiting for ever:
each pass says so in one error line naming the API server and what was kept,
/health-check and /metrics name it, and both services resume alone once it answers. The
control plane is this test's own, so freezing it stalls no other test.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.chaos.recommender_run import Log, metric
from tests.cluster import toolchain
from tests.cluster.controlplane import ControlPlane, wait_for_default_namespace
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import _unavailable
from tests.cluster.processes import free_port, http_get, tailor_process
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until

INTERVAL = 4.0
TIMEOUT = 10.0


def _passes(component: str, port: int) -> float | None:
    text = http_get(f"http://127.0.0.1:{port}/metrics")[1]
    return metric(text, f"tailor_{component}_passes_total", outcome="ok")


def _named(port: int) -> bool:
    return "api-server down for" in http_get(f"http://127.0.0.1:{port}/health-check")[1]


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[ControlPlane]:
    try:
        plane = ControlPlane(tmp_path / "cluster", toolchain.control_plane_bin_dir(),
                             toolchain.etcd_binary())  # fmt: skip
    except toolchain.ToolMissing as error:
        _unavailable(error)
        raise
    plane.start()
    try:
        wait_for_default_namespace(plane)
        yield plane
    finally:
        plane.stop()


def test_a_frozen_api_server_is_said_once_a_pass_by_both_services(
    own_cluster: ControlPlane, tmp_path: Path
) -> None:
    with own_cluster.api_client() as client:
        install_crds(RawApi(client))
    [apiserver] = [p for p in own_cluster.processes if p.name == "kube-apiserver"]
    schedule = tmp_path / "schedule.json"
    schedule.write_text("[]")
    ports = {"recommender": free_port(), "updater": free_port()}
    common = ["--kubeconfig", str(own_cluster.kubeconfig), "--interval", f"{INTERVAL:g}s"]
    commands = {
        "recommender": ["recommender", "--prometheus", "http://127.0.0.1:9", *common],
        "updater": ["follow", "--schedule", str(schedule), *common],
    }
    logs = {name: Log(tmp_path / f"{name}.log") for name in commands}
    with (
        tailor_process([*commands["recommender"], "--metrics-port", str(ports["recommender"])],
                       logs["recommender"].path) as recommender,
        tailor_process([*commands["updater"], "--metrics-port", str(ports["updater"])],
                       logs["updater"].path) as updater,
    ):  # fmt: skip
        for name, port in ports.items():
            wait_until(partial(_passes, name, port), timeout=60, what=f"a first {name} pass")
        os.kill(apiserver.pid, signal.SIGSTOP)
        frozen = time.monotonic()
        said_after = {}
        try:
            for name, log in logs.items():
                said = wait_until(partial(log.next_with, "api-server unavailable"), timeout=40)
                said_after[name] = time.monotonic() - frozen
                assert f"read timeout={TIMEOUT:g}" in said or "timed out" in said, said
                assert "kept:" in said
                wait_until(partial(_named, ports[name]), timeout=10, what="health names it")
                text = http_get(f"http://127.0.0.1:{ports[name]}/metrics")[1]
                assert metric(text, f"tailor_{name}_dependency_up", dependency="api-server") == 0
        finally:
            os.kill(apiserver.pid, signal.SIGCONT)
        for name, log in logs.items():
            wait_until(partial(log.next_with, "api-server answers again"), timeout=40)
            assert "Traceback" not in log.path.read_text(), name
        assert recommender.process.poll() is None and updater.process.poll() is None
    assert recommender.code == 0 and updater.code == 0
    print(
        "\nchaos api server frozen: said after "
        + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in said_after.items())
        + f" (interval {INTERVAL:g}s, read timeout {TIMEOUT:g}s); both resumed"
    )
