"""`tailor recommender` as a process: its own /metrics and /health-check.

With its source unreachable every pass fails; the failures are counted and, after
five intervals without a finished pass, the health check turns 500 so that the
kubelet's liveness probe restarts the pod.
"""

from __future__ import annotations

import socket
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from tailor.cli.main import app
from tests.cli_text import plain
from tests.cluster.controlplane import ControlPlane
from tests.cluster.processes import free_port, http_get, tailor_process
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until
from tests.recommender.service.served import serve_a_pod_without_history


def _failed_passes(text: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "tailor_recommender_passes_total" and sample.labels == {
                "outcome": "failed"
            }:
                return sample.value
    return -1.0


def test_failing_passes_are_counted_and_turn_the_health_check_red(
    kube_cluster: ControlPlane, kube_api: RawApi, kube_namespace: str, tmp_path: Path
) -> None:
    serve_a_pod_without_history(kube_api, kube_namespace)  # each pass must ask Prometheus
    port = free_port()
    command = [
        "recommender",
        "--prometheus", "http://127.0.0.1:9", "--kubeconfig", str(kube_cluster.kubeconfig),
        "--interval", "1s", "--metrics-port", str(port),
    ]  # fmt: skip
    log = tmp_path / "recommender.log"
    base = f"http://127.0.0.1:{port}"
    with tailor_process(command, log) as service:
        status = wait_until(lambda: http_get(f"{base}/health-check")[0], what="endpoint up")
        assert status == 200  # within five intervals of the start
        wait_until(
            lambda: _failed_passes(http_get(f"{base}/metrics")[1]) >= 2, what="failed passes"
        )

        def red() -> str | None:
            status, text = http_get(f"{base}/health-check")
            return text if status == 500 else None

        text = wait_until(red, timeout=20, what="health check 500")
        assert text.startswith("no pass finished for ")
        assert "(allowed 5s)" in text
        assert service.process.poll() is None  # unhealthy, still running: the kubelet decides
    assert service.code == 0, service.output()
    assert "cannot reach Prometheus at http://127.0.0.1:9" in log.read_text()


def test_a_metrics_port_in_use_is_exit_2_before_any_pass(
    kube_cluster: ControlPlane,
) -> None:
    with socket.create_server(("0.0.0.0", 0)) as busy:
        port = busy.getsockname()[1]
        result = CliRunner().invoke(
            app,
            [
                "recommender", "--prometheus", "http://127.0.0.1:9", "--metrics-port", str(port),
                "--kubeconfig", str(kube_cluster.kubeconfig),
            ],
        )  # fmt: skip
    assert result.exit_code == 2
    assert "--metrics-port" in plain(result.output)
    assert "cannot listen on" in plain(result.output)
