"""What no client can do to the webhook: bloat it, hold its connections, or make it queue.

A real TLS server on loopback with short deadlines; the cluster view is a fake one
that can be made slow, to stand for an event loop too far behind or an API server
that does not answer.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from admission.connections import ConnectionLimits
from admission.metrics import Batch
from admission.review import ReviewError
from admission.server import LoopLag, ReviewLimits, _Refused, make_app
from tests.admission.https import Served, answer, serve
from tests.admission.objects import APP_TARGETS, vpa
from tests.admission.test_admit import BAD_BOUNDS, View, new_pod, review

QUICK = ConnectionLimits(header_seconds=0.5, body_seconds=0.5, backpressure=3)


@pytest.fixture
def quick(tmp_path: Path) -> Iterator[tuple[Served, Batch]]:
    batch = Batch()
    served = serve(
        View([vpa("Auto", APP_TARGETS)]),
        tmp_path,
        limits=ReviewLimits(connections=QUICK),
        metrics=batch,
    )
    try:
        yield served, batch
    finally:
        served.server.stop()


def tls(served: Served) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(served.ca.pair.cert_file))
    raw = socket.create_connection(("127.0.0.1", served.server.port), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def closed_by_server(conn: socket.socket) -> bool:
    """Whether the server ends the connection (EOF or reset) before our 10 s read timeout."""
    try:
        return conn.recv(1024) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True
    except TimeoutError:
        return False


def cuts(batch: Batch) -> list[str]:
    return [label for kind, label, _ in batch.records if kind == "cut"]


def test_slow_headers_slow_bodies_and_idle_connections_are_cut(
    quick: tuple[Served, Batch],
) -> None:
    served, batch = quick
    with tls(served) as headers:
        headers.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\n")  # ... and no more
        assert closed_by_server(headers)
    with tls(served) as body:
        body.sendall(b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Length: 1000\r\n\r\n{")
        begun = time.monotonic()
        assert body.recv(1024).startswith(b"HTTP/1.1 408")
        assert 0.4 < time.monotonic() - begun < 5
        assert closed_by_server(body)
    with tls(served) as idle:
        assert closed_by_server(idle)
    assert cuts(batch) == ["body_timeout"]  # granian's own cuts are not told to the app
    status, text = served.post("/mutate", review(new_pod()))  # others are still served
    assert status == 200 and "patch" in answer(text)


def test_silent_and_idle_connections_past_the_backpressure_delay_no_review(
    quick: tuple[Served, Batch],
) -> None:
    """A connection that never says hello is held until granian's 10 s handshake
    deadline, but holds no turn (backpressure counts requests, not connections)."""
    served, _ = quick
    silent = [socket.create_connection(("127.0.0.1", served.server.port)) for _ in range(10)]
    idle = [tls(served) for _ in range(10)]
    try:
        begun = time.monotonic()
        for _ in range(5):
            status, text = served.post("/mutate", review(new_pod()))
            assert status == 200 and "patch" in answer(text)
        assert time.monotonic() - begun < 5
    finally:
        for conn in [*silent, *idle]:
            conn.close()


def test_a_request_without_content_length_is_411_and_other_paths_404(
    quick: tuple[Served, Batch],
) -> None:
    served, batch = quick
    with tls(served) as chunked:
        chunked.sendall(
            b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"2\r\n{}\r\n0\r\n\r\n"
        )
        assert chunked.recv(1024).startswith(b"HTTP/1.1 411")
    assert served.post("/elsewhere", b"{}")[0] == 404
    assert served.post("/healthz", b"{}")[0] == 405
    assert batch.records == []  # nothing decided, nothing counted


def test_a_body_over_3_mib_is_413_and_a_bomb_of_tiny_objects_is_400_unparsed(
    quick: tuple[Served, Batch],
) -> None:
    served, batch = quick
    with tls(served) as oversized:  # refused on its Content-Length, before a byte of body
        size = 3 * 1024 * 1024 + 1
        oversized.sendall(b"POST /mutate HTTP/1.1\r\nHost: w\r\nContent-Length: %d\r\n\r\n" % size)
        assert oversized.recv(1024).startswith(b"HTTP/1.1 413")
    for length in (b"x12", b"-1", b"5\r\nContent-Length: 6"):  # hyper's 400, not the handler's
        with tls(served) as unreadable:
            unreadable.sendall(b"POST /mutate HTTP/1.1\r\nHost: w\r\nContent-Length: " + length)
            unreadable.sendall(b"\r\n\r\n{}")
            assert unreadable.recv(1024).startswith(b"HTTP/1.1 400")
    bomb = review({"apiVersion": "v1", "kind": "Pod", "metadata": {"x": [{}] * 700_000}})
    assert len(bomb) < 3 * 1024 * 1024
    status, text = served.post("/mutate", bomb)
    assert status == 400
    assert "JSON objects and arrays, more than a pod needs" in text
    assert [label for kind, label, _ in batch.records if kind == "review"] == ["bad_request"]


class SlowView(View):
    """Deciding takes `seconds` on the event loop (a worker far behind), or the API read
    of the pod's ReplicaSet takes `api_seconds` (an API server that does not answer)."""

    def __init__(self, seconds: float = 0.0, api_seconds: float = 0.0) -> None:
        super().__init__([vpa("Auto", APP_TARGETS)])
        self.seconds, self.api_seconds = seconds, api_seconds
        self.read_done = threading.Event()

    def vpas(self, namespace: str) -> Any:
        time.sleep(self.seconds)
        return super().vpas(namespace)

    def has_controller(self, kind: str, namespace: str, name: str) -> bool:
        return self.api_seconds == 0

    def controller(self, kind: str, namespace: str, name: str) -> Any:
        time.sleep(self.api_seconds)
        self.read_done.set()
        return super().controller(kind, namespace, name)


def test_a_worker_too_far_behind_answers_unchanged_at_once_and_counts_it(
    tmp_path: Path,
) -> None:
    batch = Batch()
    limits = ReviewLimits(shed_lag_seconds=0.1)
    served = serve(SlowView(seconds=0.3), tmp_path, limits=limits, metrics=batch)
    bad_vpa = json.loads(review(BAD_BOUNDS, "CREATE", "verticalpodautoscalers"))
    bad_vpa["request"]["resource"]["group"] = "autoscaling.k8s.io"
    try:
        with ThreadPoolExecutor(9) as pool:
            pods = [pool.submit(served.post, "/mutate", review(new_pod())) for _ in range(4)]
            vpa_write = pool.submit(served.post, "/mutate", json.dumps(bad_vpa).encode())
            pods += [pool.submit(served.post, "/mutate", review(new_pod())) for _ in range(4)]
            answers = [pod.result() for pod in pods]
            status, text = vpa_write.result()
    finally:
        served.server.stop()
    assert status == 200 and answer(text)["allowed"] is False  # never shed: always checked
    assert all(status == 200 and answer(text)["allowed"] for status, text in answers)
    outcomes = [label for kind, label, _ in batch.records if kind == "review"]
    assert "shed" in outcomes and "patched" in outcomes
    shed = [answer(text) for _, text in answers if "patch" not in answer(text)]
    assert shed and all("overloaded, pod admitted as written" in a["warnings"][0] for a in shed)


def test_the_loop_lag_ticks_often_only_while_reviews_come_and_measures_any_block() -> None:
    async def ticks_and_lags() -> tuple[int, float, int, float]:
        lag = LoopLag(quiet_seconds=1.0)
        follower = asyncio.create_task(lag.follow())
        await asyncio.sleep(0.5)  # no review: a tick every 100 ms
        idle_ticks = lag.ticks
        time.sleep(0.3)  # the loop held with no review
        await asyncio.sleep(0.01)
        idle_lag = lag.seconds
        lag.seen()
        await asyncio.sleep(0.11)  # the quiet tick under way ends
        begun = lag.ticks
        await asyncio.sleep(0.3)  # reviews came within a second: a tick every 10 ms
        busy_ticks = lag.ticks - begun
        time.sleep(0.3)
        await asyncio.sleep(0.001)
        follower.cancel()
        return idle_ticks, idle_lag, busy_ticks, lag.seconds

    idle_ticks, idle_lag, busy_ticks, busy_lag = asyncio.run(ticks_and_lags())
    assert idle_ticks <= 6 < busy_ticks
    # a 0.3 s block seen by a tick due up to one tick (0.1 s idle, 0.01 s busy) into it
    assert idle_lag >= 0.19 and busy_lag >= 0.25


def test_an_api_read_past_the_budget_is_answered_unchanged_before_it_ends(
    tmp_path: Path,
) -> None:
    batch = Batch()
    view = SlowView(api_seconds=3.0)
    served = serve(view, tmp_path, limits=ReviewLimits(budget_seconds=0.3), metrics=batch)
    try:
        status, text = served.post("/mutate", review(new_pod()))
        assert not view.read_done.is_set()  # the answer came while the read still hung
    finally:
        served.server.stop()
    assert status == 200
    response = json.loads(text)["response"]
    assert response["allowed"] and "patch" not in response
    assert "API server slow, pod admitted as written" in response["warnings"][0]
    assert [label for kind, label, _ in batch.records if kind == "review"] == ["timeout"]


class _Body:
    """A request's body as granian hands it over: here once `given` is set, or never."""

    def __init__(self) -> None:
        self.given = asyncio.Event()

    async def __call__(self) -> bytes:
        await self.given.wait()
        return b"{}"


def test_a_large_bodys_wait_for_its_turn_counts_against_its_body_deadline() -> None:
    limits = ReviewLimits(
        large_body_bytes=10, max_large_bodies=1, connections=ConnectionLimits(body_seconds=1.0)
    )
    app = make_app(View([]), lambda: True, limits=limits)
    scope = SimpleNamespace(headers={"content-length": "100"})

    async def cut_after() -> float:
        app.__rsgi_init__(asyncio.get_running_loop())
        try:
            holder = _Body()
            first = asyncio.create_task(app.read(scope, holder, time.monotonic()))
            await asyncio.sleep(0.01)
            begun = time.monotonic()
            second = asyncio.create_task(app.read(scope, _Body(), begun))
            await asyncio.sleep(0.6)  # the second waits for the first's turn meanwhile
            holder.given.set()
            with pytest.raises(ReviewError):
                await first
            with pytest.raises(_Refused) as refused:
                await second  # its body never comes
            assert refused.value.status == 408
            return time.monotonic() - begun
        finally:
            app.__rsgi_del__(asyncio.get_running_loop())

    # 1 s from its headers (within a sweep of 0.2 s), not 1 s from its turn (1.6 s)
    assert 0.95 < asyncio.run(cut_after()) < 1.4
