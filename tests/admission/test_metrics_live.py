"""`tailor admission`'s /metrics, live: a real process on loopback, reading the real API
server through a proxy that can hang, counts what it did in each of its workers' ways out:
an API read, a review past its budget (`timeout`), reviews answered at once while the API
reads pile up (`shed`), and a client too slow with its headers (a connection cut)."""

from __future__ import annotations

import http.client
import socket
import ssl
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.admission.burst import review_body
from tests.admission.https import call, serving_pair
from tests.admission.proxy import Proxy
from tests.cluster.certs import CertificateAuthority
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.processes import free_port, tailor_process
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until

SAMPLES = {
    "tailor_admission_reviews_total": "outcome",
    "tailor_admission_connections_cut_total": "reason",
    "tailor_admission_api_reads_total": "outcome",
}


def scraped(port: int) -> dict[tuple[str, str], float]:
    """(metric, label) -> value of the three counters, from the service's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, sample.labels[SAMPLES[sample.name]]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name in SAMPLES
    }


def proxied_kubeconfig(cluster: ControlPlane, proxy: Proxy, path: Path) -> Path:
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_webhooks_metrics_count_shed_timeouts_cuts_and_api_reads_live(
    kube_cluster: ControlPlane, kube_api: RawApi, tmp_path: Path
) -> None:
    install_crds(kube_api)
    server = urlsplit(kube_cluster.server)
    proxy = Proxy((str(server.hostname), int(server.port or 443)))
    ca, pair = serving_pair(tmp_path / "tls")
    port, metrics_port = free_port(), free_port()
    command = [
        "admission", "--tls-cert", str(pair.cert_file), "--tls-key", str(pair.key_file),
        "--port", str(port), "--address", "127.0.0.1", "--metrics-port", str(metrics_port),
        "--kubeconfig", str(proxied_kubeconfig(kube_cluster, proxy, tmp_path / "kubeconfig")),
        "--workers", "1", "--status-lease", "default/tailor-admission-metrics",
    ]  # fmt: skip
    context = ssl.create_default_context(cafile=str(ca.pair.cert_file))

    def opened() -> http.client.HTTPSConnection:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
        conn.connect()  # the handshake done before the review is sent
        return conn

    def reviewed(conn: http.client.HTTPSConnection, body: bytes) -> int:
        conn.request("POST", "/mutate", body, {"Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        conn.close()
        return answer.status

    try:
        with tailor_process(command, tmp_path / "admission.log") as service:
            healthz = f"https://127.0.0.1:{port}/healthz"
            wait_until(lambda: _up(healthz, ca), timeout=90, what="the webhook serving")
            # a ReplicaSet the watch has not brought: read from the API server (ok: absent)
            assert reviewed(opened(), review_body(0, "unknown-rs-0")) == 200

            # a body begun and never finished: cut at the body deadline (10 s); granian's
            # own cuts (headers, idle) are not told to the app, so not counted
            stalled = context.wrap_socket(
                socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1"
            )
            stalled.sendall(
                b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Length: 1000\r\n\r\n{"
            )
            # a body 2.5 s after its headers: the review's 2 s budget is spent before the
            # read it needs, so it is answered unchanged at once (timeout)
            late = review_body(1, "unknown-rs-late")
            slow_body = opened()
            slow_body.putrequest("POST", "/mutate")
            slow_body.putheader("Content-Type", "application/json")
            slow_body.putheader("Content-Length", str(len(late)))
            slow_body.endheaders()
            time.sleep(2.5)
            slow_body.send(late)
            assert slow_body.getresponse().status == 200
            slow_body.close()

            # the API server hangs: 24 reviews that each need a read arrive at once; past
            # 16 waiting on the API server, the rest are answered unchanged at once (shed)
            proxy.freeze()
            try:
                ready = [opened() for _ in range(24)]
                bodies = [review_body(2, f"unknown-rs-{i}") for i in range(24)]
                with ThreadPoolExecutor(24) as pool:
                    statuses = list(pool.map(reviewed, ready, bodies))
            finally:
                proxy.thaw()
            assert statuses == [200] * 24

            expected = {
                ("tailor_admission_reviews_total", "timeout"),
                ("tailor_admission_reviews_total", "shed"),
                ("tailor_admission_connections_cut_total", "body_timeout"),
                ("tailor_admission_api_reads_total", "ok"),
                ("tailor_admission_api_reads_total", "failed"),
            }

            def counted() -> dict[tuple[str, str], float] | None:
                now = scraped(metrics_port)
                return now if all(now.get(key, 0) >= 1 for key in expected) else None

            found = wait_until(
                counted,
                timeout=15,
                what=f"{sorted(expected)} counted on /metrics",
            )
            reviews = {k[1]: v for k, v in found.items() if k[0].endswith("reviews_total")}
            assert reviews["shed"] + reviews["timeout"] + reviews["unchanged"] == 26
            stalled.close()
            assert service.process.poll() is None
        assert service.code == 0, service.output()
    finally:
        proxy.close()


def _up(url: str, ca: CertificateAuthority) -> bool:
    try:
        return call(url, ca)[0] == 200
    except OSError:
        return False
