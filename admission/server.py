"""The webhook's HTTPS edge: POST /mutate (AdmissionReview v1) and GET /healthz (aiohttp).

A review is decided on the event loop when the cluster view has what it needs in
memory (the common case: everything comes from the watches), and in a worker thread,
within the review's budget, when a controller must be read from the API server. A
review that cannot be answered in time is answered "allowed, unchanged" at once
(`shed`: the loop is too far behind; `timeout`: the read outlasted the budget), since
with failurePolicy Ignore the API server would admit the pod unsized anyway, only
later. Every connection is held to the deadlines of `admission.connections`.
The server runs on its own thread and loop (`WebhookServer`), the same way in a
worker process (`admission.workers`) and in the tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import orjson
import uvloop
from aiohttp import web

from admission.admit import ClusterView, admit, needs_api
from admission.connections import BODY, BUSY, IDLE, ConnectionLimits, GuardedProtocols
from admission.metrics import MetricsSink, ReviewMetrics
from admission.review import AdmissionRequest, ReviewError, Verdict, parse_review, review_response
from admission.verdicts import Revised, VerdictCache
from tailor.quantity import Quantity
from tailor.scope import EVERYWHERE, NamespaceScope

__all__ = ["ReviewLimits", "ReviewMetrics", "WebhookServer", "make_app"]

LOG = logging.getLogger("tailor.admission")
Listener = Callable[[AdmissionRequest, Verdict], None]
T = TypeVar("T")
GUARD = web.AppKey("guard", GuardedProtocols)
VERDICTS = web.AppKey("verdicts", VerdictCache)
_LAG_TICK, _QUIET_TICK = 0.01, 0.1


@dataclass(frozen=True)
class ReviewLimits:
    """What one review may cost: its body (the API server's own request limit is 3 MiB),
    the time to an answer, and when to stop deciding and answer unchanged at once."""

    max_body_bytes: int = 3 * 1024 * 1024
    # bodies above this are read and parsed `max_large_bodies` at a time (a pod is ~10 KiB)
    large_body_bytes: int = 256 * 1024
    max_large_bodies: int = 2
    # well inside the API server's webhook timeout (--webhook-timeout, 5s by default)
    budget_seconds: float = 2.0
    # the event loop this far behind: reviews waiting now could not be answered in time
    shed_lag_seconds: float = 0.25
    # reviews waiting on an API read at once; more are answered unchanged
    max_api_reviews: int = 16
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)


class LoopLag:
    """How late the event loop runs a callback due now: the wait every review sees.

    It ticks every 10 ms while reviews come (`seen`) and for `quiet_seconds` after the
    last, every 100 ms otherwise: a 10 ms tick through idle hours cost each worker about
    2 % of a core, a fifth of all it spent at 100 reviews/s (docs/results/webhook.md).
    A tick measures a block of any length (it runs late by that much); the tick only
    says how soon the loop's recovery is noticed."""

    def __init__(self, quiet_seconds: float = 1.0) -> None:
        self.seconds = 0.0
        self.quiet_seconds = quiet_seconds
        self.ticks = 0
        self._last_seen = 0.0

    def seen(self) -> None:
        """A review came: tick often from now on."""
        self._last_seen = time.monotonic()

    async def follow(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            quiet = time.monotonic() - self._last_seen > self.quiet_seconds
            tick = _QUIET_TICK if quiet else _LAG_TICK
            due = loop.time() + tick
            await asyncio.sleep(tick)
            self.seconds = max(0.0, loop.time() - due)
            self.ticks += 1


def _unchanged(reason: str, warning: str) -> Verdict:
    """Allowed as written, saying why to the client (kubectl shows warnings)."""
    warned = f"kube-tailor admission: {warning}, pod admitted as written"
    return Verdict(warnings=(warned,), reason=reason)


class _Reviews:
    """The webhook's handlers and what they share: the loop's lag, the turns for large
    bodies and for API reads, the connection guard."""

    def __init__(
        self,
        view: ClusterView,
        ready: Callable[[], bool],
        listener: Listener | None,
        metrics: MetricsSink | None,
        scope: NamespaceScope,
        max_cpu_boost: Quantity | None,
        limits: ReviewLimits,
    ) -> None:
        self.view, self.ready, self.listener, self.metrics = view, ready, listener, metrics
        self.scope, self.max_cpu_boost, self.limits = scope, max_cpu_boost, limits
        self.lag = LoopLag()
        self.large_bodies = asyncio.Semaphore(limits.max_large_bodies)
        cut = metrics.connection_cut if metrics else None
        self.guard = GuardedProtocols(None, limits.connections, cut)
        self.waiting_on_api = 0
        self.verdicts = VerdictCache(view) if isinstance(view, Revised) else None

    def decided_now(self, review: AdmissionRequest) -> Verdict:
        """The verdict from memory, on the loop: a pod identical to one just decided, at the
        same revision of the cluster view, gets the same (`admission.verdicts`)."""
        view, scope, boost = self.view, self.scope, self.max_cpu_boost
        if self.verdicts is None or not review.is_pod_create():
            return admit(review, view, scope, boost)
        return self.verdicts.verdict(review, lambda: admit(review, view, scope, boost))

    def record(self, outcome: str, begun: float) -> None:
        if self.metrics is not None:
            self.metrics.review(outcome, time.monotonic() - begun)

    async def decide(self, review: AdmissionRequest, begun: float) -> tuple[Verdict, str]:
        limits, view, scope, boost = self.limits, self.view, self.scope, self.max_cpu_boost
        # a VPA being written is always checked (cheap, and an invalid one must be refused)
        if self.lag.seconds > limits.shed_lag_seconds and review.is_pod_create():
            return _unchanged("shed: overloaded", "overloaded"), "shed"
        if not needs_api(review, view):
            verdict = self.decided_now(review)
        elif self.waiting_on_api >= limits.max_api_reviews:
            return _unchanged("shed: too many API reads", "overloaded"), "shed"
        else:
            self.waiting_on_api += 1
            remaining = limits.budget_seconds - (time.monotonic() - begun)
            try:
                work = asyncio.to_thread(admit, review, view, scope, boost)
                verdict = await asyncio.wait_for(work, max(remaining, 0.001))
            except TimeoutError:
                late = _unchanged("timeout: the API server did not answer", "API server slow")
                return late, "timeout"
            finally:
                self.waiting_on_api -= 1
        outcome = "denied" if verdict.denied else "patched" if verdict.operations else "unchanged"
        return verdict, outcome

    async def read(self, request: web.Request) -> AdmissionRequest:
        """The parsed review; a large body waits for one of `max_large_bodies` turns, so no
        crowd of them is held in memory at once (the others stay in their sockets)."""
        guard = self.guard
        if (request.content_length or 0) <= self.limits.large_body_bytes:
            guard.phase(request.transport, BODY)
            body = await request.read()  # past max_body_bytes: 413; slow: cut (BODY deadline)
            guard.phase(request.transport, BUSY)
            return parse_review(body)
        guard.phase(request.transport, BUSY)  # waiting for a turn is ours, not the client's
        try:
            await asyncio.wait_for(self.large_bodies.acquire(), self.limits.budget_seconds)
        except TimeoutError:
            raise web.HTTPServiceUnavailable(text="too many large reviews at once\n") from None
        try:
            guard.phase(request.transport, BODY)
            body = await request.read()
            guard.phase(request.transport, BUSY)
            return parse_review(body)
        finally:
            self.large_bodies.release()

    async def mutate(self, request: web.Request) -> web.Response:
        try:
            return await self.answer(request)
        finally:  # answered, refused or failed: the connection waits for its next request
            self.guard.phase(request.transport, IDLE)

    async def answer(self, request: web.Request) -> web.Response:
        begun = time.monotonic()
        self.lag.seen()
        try:
            review = await self.read(request)
        except ReviewError as error:
            self.record("bad_request", begun)
            return web.Response(status=400, text=f"{error}\n")
        verdict, outcome = await self.decide(review, begun)
        self.record(outcome, begun)
        if self.listener is not None:
            self.listener(review, verdict)
        if verdict.denied:
            LOG.info("%s/%s: %s", review.namespace, _pod_name(review), verdict.reason)
        elif outcome != "unchanged" and LOG.isEnabledFor(logging.DEBUG):
            # a line per sized or shed pod would cost a burst more than its reviews: the
            # metrics count them and the Events say them
            LOG.debug("%s/%s: %s", review.namespace, _pod_name(review), verdict.reason)
        body = orjson.dumps(review_response(review, verdict))
        return web.Response(body=body, content_type="application/json")

    async def healthz(self, _: web.Request) -> web.Response:
        if self.ready():
            return web.Response(text="ok\n")
        return web.Response(status=503, text="VPAs and LimitRanges not loaded yet\n")

    async def follow_lag(self, _: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(self.lag.follow())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def make_app(
    view: ClusterView,
    ready: Callable[[], bool],
    listener: Listener | None = None,
    metrics: MetricsSink | None = None,
    scope: NamespaceScope = EVERYWHERE,
    max_cpu_boost: Quantity | None = None,
    limits: ReviewLimits = ReviewLimits(),
) -> web.Application:
    """The aiohttp application; `listener` sees every verdict (logging, tests)."""
    reviews = _Reviews(view, ready, listener, metrics, scope, max_cpu_boost, limits)
    app = web.Application(client_max_size=limits.max_body_bytes)
    app[GUARD] = reviews.guard
    if reviews.verdicts is not None:
        app[VERDICTS] = reviews.verdicts
    app.cleanup_ctx.append(reviews.follow_lag)
    app.router.add_post("/mutate", reviews.mutate)
    app.router.add_get("/healthz", reviews.healthz)
    return app


def _pod_name(review: AdmissionRequest) -> str:
    metadata = review.obj.get("metadata") if isinstance(review.obj, dict) else None
    if not isinstance(metadata, dict):
        return "?"
    return str(metadata.get("name") or f"{metadata.get('generateName') or ''}*")


def listening_socket(host: str, port: int) -> socket.socket:
    """The listening socket, made before any worker starts (OSError: in use, bad address)."""
    sock = socket.create_server((host, port), backlog=1024)
    sock.setblocking(False)
    return sock


class WebhookServer:
    """An aiohttp app served over TLS on its own thread; `start()` returns once it listens.

    `sock` may be shared with other processes (the pre-fork workers accept from it).
    """

    def __init__(
        self,
        app: web.Application,
        context: ssl.SSLContext,
        host: str = "0.0.0.0",
        port: int = 0,
        sock: socket.socket | None = None,
    ) -> None:
        self.app, self.context, self.host = app, context, host
        self.sock = sock if sock is not None else listening_socket(host, port)
        self.port: int = self.sock.getsockname()[1]
        self.guard = app[GUARD]
        # uvloop: its TLS layer is compiled, where asyncio's runs Python code for every
        # record and zeroes a 256 KiB buffer per connection (docs/results/webhook.md)
        self._loop = uvloop.new_event_loop()
        # aiohttp's own keep-alive close only backs ours up (ours counts the cut)
        keepalive = self.guard.limits.idle_seconds + 5
        self._runner = web.AppRunner(app, access_log=None, keepalive_timeout=keepalive)
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="tailor-webhook")

    def start(self) -> WebhookServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=30)
        return self

    async def _serve(self) -> None:
        await self._runner.setup()
        self.guard.factory = self._runner.server  # set by setup()
        self._server = await self._loop.create_server(
            self.guard,
            sock=self.sock,
            ssl=self.context,
            ssl_handshake_timeout=self.guard.limits.handshake_seconds,
        )

    def call(self, function: Callable[[], T]) -> T:
        """`function()` run on the server's loop thread, where handshakes read the SSL context.

        OpenSSL does not allow changing an SSL_CTX while another thread makes connections
        from it, so a certificate swap goes through here.
        """

        async def run() -> T:
            return function()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()  # no new connection; the socket stays for other workers
        await self._runner.cleanup()

    def stop(self) -> None:
        """Stop accepting, finish the reviews under way, end the loop and its thread."""
        if self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            future.result(timeout=30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
        self._loop.close()
        self.sock.close()
