"""The Prometheus source's HTTP edge: token and TLS settings, unreachable servers,
answers that are not Prometheus's, and matrices with broken points or labels."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from recommender.data.prometheus import (
    PrometheusSettings,
    PrometheusSourceError,
    connect,
    load_prometheus_history,
)

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def test_connection_carries_token_headers_and_tls_settings(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    settings = PrometheusSettings(
        url="https://prom.example:9090/",
        bearer_token=SecretStr("s3cret"),
        headers={"X-Scope-OrgID": "team"},
        ca_file=ca,
    )
    client = connect(settings)
    assert client.url == "https://prom.example:9090"
    assert client.headers == {"X-Scope-OrgID": "team", "Authorization": "Bearer s3cret"}
    assert client._session.verify == str(ca)
    insecure = connect(PrometheusSettings(url="https://p", verify_tls=False))
    assert insecure._session.verify is False
    assert "s3cret" not in repr(settings)


def test_unreachable_server_is_a_source_error_naming_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"  # nothing listens once the probe is closed
    settings = PrometheusSettings(url=url, start=T0, end=T0 + timedelta(hours=1), retries=0)
    with pytest.raises(PrometheusSourceError, match=f"cannot reach Prometheus at {url}"):
        load_prometheus_history(settings)


class _NotPrometheus(http.server.BaseHTTPRequestHandler):
    """Answers every GET with 200 and the body named by the server's `body` attribute."""

    def do_GET(self) -> None:
        body = self.server.body  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>Grafana</body></html>",
        b"{}",
        b"[]",
        b'{"status": "success", "data": {"resultType": "matrix"}}',
        b'{"status": "success", "data": {"result": [{"metric": {}, "value": [1, "2"]}]}}',
    ],
)
def test_a_server_that_is_not_prometheus_is_named_as_such(body: bytes) -> None:
    not_prometheus = pytest.raises(PrometheusSourceError, match="does not answer like a Prometheus")
    with _answering(body) as settings, not_prometheus:
        load_prometheus_history(settings)


@contextlib.contextmanager
def _answering(body: bytes) -> Iterator[PrometheusSettings]:
    """Settings for a loopback server that answers every query with `body`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotPrometheus)
    server.body = body  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield PrometheusSettings(url=url, start=T0, end=T0 + timedelta(hours=1), retries=0)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _series(values: object, namespace: object = "shop") -> bytes:
    metric = {"namespace": namespace, "pod": "web-1", "container": "app"}
    result = [{"metric": metric, "values": values}]
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}}
    ).encode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (_series([[1, "abc"]]), "not a list of \\[time, value\\] pairs"),
        (_series([[1]]), "not a list of \\[time, value\\] pairs"),
        (_series([[1, "2"], [3]]), "not a list of \\[time, value\\] pairs"),
        (_series([[1, "2"]], namespace=5), "label namespace .* is not text"),
    ],
)
def test_a_matrix_with_broken_points_or_labels_is_a_source_error(body: bytes, message: str) -> None:
    """Prometheus never sends these; a proxy or a fake might. Named, never a traceback."""
    with _answering(body) as settings, pytest.raises(PrometheusSourceError, match=message):
        load_prometheus_history(settings)


class _CutShort(http.server.BaseHTTPRequestHandler):
    """Promises a long body, sends its first bytes, then stalls or hangs up."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.wfile.write(b'{"status":"success","data":{"resultType":"matrix","result":[')
        self.wfile.flush()
        if self.server.stall:  # type: ignore[attr-defined]
            self.server.released.wait(10)  # type: ignore[attr-defined]

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("stall", "message"), [(True, "did not answer within 1 s"), (False, "broke off its answer")]
)
def test_an_answer_cut_short_is_a_source_error_naming_the_url(stall: bool, message: str) -> None:
    """The body is read after the headers: a server stalling or hanging up midway is named."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CutShort)
    server.stall, server.released = stall, threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    settings = PrometheusSettings(
        url=url, start=T0, end=T0 + timedelta(hours=1), retries=0, timeout_seconds=1
    )
    try:
        with pytest.raises(PrometheusSourceError, match=f"Prometheus at {url} {message}"):
            load_prometheus_history(settings)
    finally:
        server.released.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
        thread.join()
