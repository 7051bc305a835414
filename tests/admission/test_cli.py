"""`tailor admission`: flags checked before it listens (exit 2), and the service end to end."""

from __future__ import annotations

import socket
import ssl
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from tailor.cli.main import app
from tests.admission.https import SecretMount, answer, call, der, presented, serving_pair
from tests.admission.test_admit import new_pod, review
from tests.cli_text import plain
from tests.cluster.controlplane import ControlPlane
from tests.cluster.processes import free_port, tailor_process
from tests.cluster.waiting import wait_until


def run(*args: str) -> tuple[int, str]:
    # wide enough that rich never wraps a long temporary path inside its error box
    result = CliRunner().invoke(app, ["admission", *args], env={"COLUMNS": "1000"})
    return result.exit_code, plain(result.output)


@pytest.fixture
def pair_files(tmp_path: Path) -> tuple[str, str]:
    _, pair = serving_pair(tmp_path)
    return str(pair.cert_file), str(pair.key_file)


def test_a_missing_certificate_or_key_is_exit_2(
    pair_files: tuple[str, str], tmp_path: Path
) -> None:
    cert, key = pair_files
    code, output = run("--tls-cert", str(tmp_path / "none.crt"), "--tls-key", key)
    assert code == 2
    assert "none.crt is not a file" in output
    code, output = run("--tls-cert", cert)
    assert code == 2
    assert "--tls-key" in output


def test_a_metrics_port_in_use_is_exit_2_and_leaves_no_port_bound(
    pair_files: tuple[str, str], kube_cluster: ControlPlane
) -> None:
    cert, key = pair_files
    webhook_port = free_port()
    with socket.create_server(("0.0.0.0", 0)) as busy:
        code, output = run(
            "--tls-cert", cert, "--tls-key", key, "--port", str(webhook_port),
            "--address", "127.0.0.1", "--kubeconfig", str(kube_cluster.kubeconfig),
            "--metrics-port", str(busy.getsockname()[1]),
        )  # fmt: skip
    assert code == 2
    assert "--metrics-port" in output
    with socket.create_server(("127.0.0.1", webhook_port)):
        pass  # the webhook's socket was closed on the way out


def test_a_key_that_does_not_belong_to_the_certificate_is_exit_2(tmp_path: Path) -> None:
    _, first = serving_pair(tmp_path / "a")
    _, second = serving_pair(tmp_path / "b")
    code, output = run("--tls-cert", str(first.cert_file), "--tls-key", str(second.key_file))
    assert code == 2
    assert "cannot use the certificate and key" in output


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--port", "0"], "--port"),
        (["--port", "70000"], "--port"),
        (["--refresh", "soon"], "--refresh"),
        (["--refresh", "10ms"], "at least 100ms"),
        (["--cert-check", "nope"], "--cert-check"),
        (["--cert-check", "0s"], "at least 1s"),
        (["--cert-check", "500ms"], "at least 1s"),
        (["--kubeconfig", "/nonexistent/kubeconfig"], "does not exist"),
        (["--max-allowed-cpu-boost", "lots"], "--max-allowed-cpu-boost"),
        (["--max-allowed-cpu-boost", "0"], "must be above 0"),
        (["--status-lease", "no-slash"], "want NAMESPACE/NAME"),
    ],
)
def test_bad_flags_are_exit_2_before_serving(
    pair_files: tuple[str, str], flags: list[str], message: str
) -> None:
    cert, key = pair_files
    code, output = run("--tls-cert", cert, "--tls-key", key, *flags)
    assert code == 2
    assert message in output


def reviews(metrics_url: str) -> dict[str, float]:
    """tailor_admission_reviews_total by outcome, as the service's /metrics reports them."""
    with urllib.request.urlopen(f"{metrics_url}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        sample.labels["outcome"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "tailor_admission_reviews_total"
    }


def test_the_service_answers_over_tls_follows_its_secret_and_stops_on_sigterm(
    kube_cluster: ControlPlane, tmp_path: Path
) -> None:
    ca, pair = serving_pair(tmp_path / "a")
    renewed_ca, renewed = serving_pair(tmp_path / "b")
    mount = SecretMount(tmp_path / "secret", pair)
    port = free_port()
    command = [
        "admission",
        "--tls-cert", str(mount.pair.cert_file), "--tls-key", str(mount.pair.key_file),
        "--port", str(port), "--address", "127.0.0.1",
        "--kubeconfig", str(kube_cluster.kubeconfig), "--refresh", "1s", "--cert-check", "1s",
        "--metrics-port", str(metrics_port := free_port()),
    ]  # fmt: skip
    log = tmp_path / "admission.log"
    url = f"https://127.0.0.1:{port}"
    with tailor_process(command, log) as service:

        def healthy() -> bool:
            try:
                return call(url + "/healthz", ca) == (200, "ok\n")
            except OSError:
                return False

        wait_until(healthy, timeout=90, what="/healthz answering")
        status, text = call(url + "/mutate", ca, b"{not json")
        assert (status, text.startswith("body is not JSON")) == (400, True)
        status, text = call(url + "/mutate", ca, review(new_pod()))
        assert status == 200
        assert answer(text) == {"uid": answer(text)["uid"], "allowed": True}  # no VPA
        metrics = f"http://127.0.0.1:{metrics_port}"

        def counted() -> tuple[float, ...]:
            found = reviews(metrics)
            return found["bad_request"], found["unchanged"], found["patched"]

        # the workers send what they counted to the parent's /metrics four times a second
        wait_until(lambda: counted() == (1, 1, 0), timeout=5, what="the reviews counted")
        with urllib.request.urlopen(f"{metrics}/health-check", timeout=5) as health:
            assert health.status == 200  # the lists refresh every second
        mount.publish_pair(renewed)

        def renewed_served() -> bool:
            # each worker process reloads on its own check: the kernel spreads new
            # connections over them, so ask until several in a row present the new one
            try:
                return all(presented(port, renewed_ca) == der(renewed) for _ in range(8))
            except ssl.SSLError:  # a worker still serves the first certificate
                return False

        wait_until(renewed_served, timeout=30, what="the renewed certificate served")
        assert call(url + "/healthz", renewed_ca) == (200, "ok\n")
        assert service.process.poll() is None
    assert service.code == 0, service.output()
    assert f"listening on https://127.0.0.1:{port}/mutate" in log.read_text()
    assert f"serving the renewed certificate from {mount.pair.cert_file}" in log.read_text()
