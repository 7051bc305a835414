"""The webhook attacked: a memory bomb, a frozen API server, slow clients (make chaos).

Each case runs the real `tailor admission` against a real kube-apiserver of its own,
on loopback, for a bounded time, and records what it measured (resident memory,
stalls, latencies) through `write_figures`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from tailor.quantity import Quantity
from tests.admission.burst import review_body
from tests.chaos.webhook_service import (
    APPS,
    Service,
    admission_service,
    apiserver_pid,
    own_control_plane,
    write_figures,
)
from tests.cluster.controlplane import ControlPlane

REPO = Path(__file__).resolve().parents[2]
# The API server gives up on a webhook after its timeoutSeconds (ours registers 5 s):
# an answer later than that is no answer.
API_SERVER_TIMEOUT = 5.0


def shipped_memory_limit() -> int:
    documents = yaml.safe_load_all((REPO / "deploy/admission/deployment.yaml").read_text())
    [deployment] = [d for d in documents if d and d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return Quantity.parse(container["resources"]["limits"]["memory"]).milli_value() // 1000


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with own_control_plane(tmp_path_factory.mktemp("chaos-webhook-cluster")) as started:
        yield started


@pytest.fixture
def service(plane: ControlPlane, tmp_path: Path) -> Iterator[Service]:
    with admission_service(plane, tmp_path) as running:
        yield running


def patched(response: dict[str, object]) -> bool:
    return response.get("allowed") is True and "patch" in response


class Prober:
    """Sends a normal review every 50 ms on its own thread; keeps (status, seconds, patched)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.results: list[tuple[int, float, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        index = 0
        while not self._stop.wait(0.05):
            status, seconds, response = self.service.review(review_body(index % APPS))
            self.results.append((status, seconds, patched(response)))
            index += 1

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def bomb(objects: int) -> bytes:
    """A review whose pod carries `objects` empty JSON objects, under the 3 MiB body cap."""
    review = json.loads(review_body(0))
    review["request"]["object"]["metadata"]["annotations"] = {}
    review["request"]["object"]["metadata"]["bomb"] = [{}] * objects
    return json.dumps(review, separators=(",", ":")).encode()


def test_a_memory_bomb_neither_bloats_nor_stalls_the_webhook(service: Service) -> None:
    for index in range(APPS):  # warm: every worker has served
        assert patched(service.review(review_body(index))[2])
    before = service.rss
    calm = [service.review(review_body(i % APPS))[1] for i in range(20)]
    refused, heavy = bomb(1_000_000), bomb(99_000)  # over / under the object count
    assert len(refused) < 3 * 2**20
    with Prober(service) as prober, ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda body: service.review(body)[0], [refused, heavy] * 8))
        peak = service.rss
    time.sleep(5)
    after = service.rss
    # refused unparsed (400), parsed (200), or no turn within the budget (503: the API
    # server's failurePolicy then decides, as for any webhook failure)
    assert set(answers[0::2]) <= {400, 503} and set(answers[1::2]) <= {200, 503}
    assert 400 in answers and 200 in answers
    # every other review answered in time; while a bomb holds the loop some are shed
    # (allowed unchanged at once), never left waiting
    assert prober.results and all(status == 200 for status, _, _ in prober.results)
    stall = max(seconds for _, seconds, _ in prober.results)
    assert stall < API_SERVER_TIMEOUT
    assert after < shipped_memory_limit()
    write_figures(
        "webhook-memory-bomb",
        {
            "bombs": "8 x 1,000,000 empty objects (2.9 MiB, refused) + 8 x 99,000 (parsed)",
            "bomb_answers": {str(code): answers.count(code) for code in sorted(set(answers))},
            "rss_before_mib": before / 2**20,
            "rss_peak_sampled_mib": peak / 2**20,
            "rss_after_5s_mib": after / 2**20,
            "review_p50_before_ms": statistics.median(calm) * 1000,
            "review_max_during_ms": stall * 1000,
            "review_p50_during_ms": statistics.median(s for _, s, _ in prober.results) * 1000,
            "reviews_during": len(prober.results),
            "reviews_during_patched": sum(ok for _, _, ok in prober.results),
        },
    )


def test_a_frozen_api_server_leaves_reviews_answered_in_time(
    service: Service, plane: ControlPlane
) -> None:
    assert patched(service.review(review_body(0))[2])
    pid = apiserver_pid(plane)
    cached: list[tuple[int, float, dict[str, object]]] = []
    unknown: list[tuple[int, float, dict[str, object]]] = []
    os.kill(pid, signal.SIGSTOP)
    try:
        frozen_until = time.monotonic() + 15
        index = 0
        while time.monotonic() < frozen_until:
            cached.append(service.review(review_body(index % APPS)))
            # a ReplicaSet the watch never brought: the one read left, through the breaker
            unknown.append(service.review(review_body(index % APPS, f"new-{index}")))
            index += 1
    finally:
        os.kill(pid, signal.SIGCONT)
    assert all(status == 200 and patched(response) for status, _, response in cached)
    assert all(status == 200 and response["allowed"] for status, _, response in unknown)
    late = [seconds for _, seconds, _ in cached + unknown if seconds >= API_SERVER_TIMEOUT]
    assert late == []
    assert any("pod admitted as written" in str(r.get("warnings")) for _, _, r in unknown)
    counted = service.reviews_counted()
    write_figures(
        "webhook-frozen-api-server",
        {
            "frozen_seconds": 15,
            "cached_owner_reviews": len(cached),
            "cached_p50_ms": statistics.median(s for _, s, _ in cached) * 1000,
            "cached_max_ms": max(s for _, s, _ in cached) * 1000,
            "unknown_owner_reviews": len(unknown),
            "unknown_p50_ms": statistics.median(s for _, s, _ in unknown) * 1000,
            "unknown_max_ms": max(s for _, s, _ in unknown) * 1000,
            "outcomes": counted,
        },
    )


def _tls(service: Service) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(service.ca.pair.cert_file))
    raw = socket.create_connection(("127.0.0.1", service.port), timeout=30)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def _closed_within(conn: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closes `conn` (None: still open after `seconds`)."""
    begun = time.monotonic()
    conn.settimeout(seconds)
    try:
        while conn.recv(1024):
            pass
    except TimeoutError:
        return None
    except (ConnectionResetError, ssl.SSLError):
        pass
    return time.monotonic() - begun


def test_slow_clients_are_cut_and_never_starve_the_others(service: Service) -> None:
    """Silent, slow-header and slow-body connections are cut at their deadlines (the
    handshake's is granian's fixed 10 s: admission.connections) and starve nobody."""
    silent = [socket.create_connection(("127.0.0.1", service.port)) for _ in range(20)]
    headers = [_tls(service) for _ in range(20)]
    bodies = [_tls(service) for _ in range(40)]
    for conn in headers:
        conn.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\n")
    for conn in bodies:
        conn.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Length: 4096\r\n\r\n{")
    with Prober(service) as prober, ThreadPoolExecutor(80) as pool:
        every: list[socket.socket] = [*silent, *headers, *bodies]
        # the header deadline is also the idle one, hence a minute (admission.connections)
        waits = [20.0] * len(silent) + [70.0] * len(headers) + [20.0] * len(bodies)
        closed = list(pool.map(_closed_within, every, waits))
    for each in [*silent, *headers, *bodies]:
        each.close()
    assert None not in closed
    assert prober.results and all(status == 200 and ok for status, _, ok in prober.results)
    write_figures(
        "webhook-slow-clients",
        {
            "no_tls_hello_closed_after_max_s": max(closed[:20]),  # type: ignore[type-var]
            "slow_headers_closed_after_max_s": max(closed[20:40]),  # type: ignore[type-var]
            "slow_bodies_closed_after_max_s": max(closed[40:]),  # type: ignore[type-var]
            "reviews_meanwhile": len(prober.results),
            "review_max_meanwhile_ms": max(s for _, s, _ in prober.results) * 1000,
        },
    )
