"""The webhook's HTTPS edge: POST /mutate (AdmissionReview v1) and GET /healthz (aiohttp).

The decision runs in a worker thread (`admit` may fetch a ReplicaSet), so one
slow read never stalls the event loop for other admissions. The server runs on
its own thread and loop (`WebhookServer`), the same way under the CLI and in
the tests.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from aiohttp import web
from prometheus_client import Counter, Histogram

from admission.admit import ClusterView, admit
from admission.review import AdmissionRequest, ReviewError, Verdict, parse_review, review_response
from tailor.quantity import Quantity
from tailor.scope import EVERYWHERE, NamespaceScope
from tailor.telemetry import ServiceTelemetry

LOG = logging.getLogger("tailor.admission")
# A pod's review carries the pod, and etcd takes objects up to 1.5 MiB.
MAX_BODY_BYTES = 8 * 1024 * 1024

Listener = Callable[[AdmissionRequest, Verdict], None]
T = TypeVar("T")


class ReviewMetrics:
    """Reviews answered, by outcome (patched, unchanged, denied, bad_request), and how long
    each took."""

    def __init__(self, telemetry: ServiceTelemetry) -> None:
        self.reviews = Counter(
            "tailor_admission_reviews",
            "AdmissionReviews answered, by outcome (patched, unchanged, denied: a VPA refused, "
            "bad_request).",
            ["outcome"],
            registry=telemetry.registry,
        )
        self.seconds = Histogram(
            "tailor_admission_review_duration_seconds",
            "Time from the request's body read to the answer.",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5),
            registry=telemetry.registry,
        )
        for outcome in ("patched", "unchanged", "denied", "bad_request"):
            self.reviews.labels(outcome)

    def record(self, outcome: str, begun: float) -> None:
        self.reviews.labels(outcome).inc()
        self.seconds.observe(time.monotonic() - begun)


def make_app(
    view: ClusterView,
    ready: Callable[[], bool],
    listener: Listener | None = None,
    metrics: ReviewMetrics | None = None,
    scope: NamespaceScope = EVERYWHERE,
    max_cpu_boost: Quantity | None = None,
) -> web.Application:
    """The aiohttp application; `listener` sees every verdict (logging, tests)."""

    async def mutate(request: web.Request) -> web.Response:
        body = await request.read()
        begun = time.monotonic()
        try:
            review = parse_review(body)
        except ReviewError as error:
            if metrics is not None:
                metrics.record("bad_request", begun)
            return web.Response(status=400, text=f"{error}\n")
        verdict = await asyncio.to_thread(admit, review, view, scope, max_cpu_boost)
        if metrics is not None:
            outcome = (
                "denied" if verdict.denied else "patched" if verdict.operations else "unchanged"
            )
            metrics.record(outcome, begun)
        if listener is not None:
            listener(review, verdict)
        if verdict.operations or verdict.warnings or verdict.denied:
            LOG.info("%s/%s: %s", review.namespace, _pod_name(review), verdict.reason)
        return web.json_response(review_response(review, verdict))

    async def healthz(_: web.Request) -> web.Response:
        if ready():
            return web.Response(text="ok\n")
        return web.Response(status=503, text="VPAs and LimitRanges not loaded yet\n")

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post("/mutate", mutate)
    app.router.add_get("/healthz", healthz)
    return app


def _pod_name(review: AdmissionRequest) -> str:
    metadata = review.obj.get("metadata") if isinstance(review.obj, dict) else None
    if not isinstance(metadata, dict):
        return "?"
    return str(metadata.get("name") or f"{metadata.get('generateName') or ''}*")


class WebhookServer:
    """An aiohttp app served over TLS on its own thread; `start()` returns once it listens."""

    def __init__(
        self, app: web.Application, context: ssl.SSLContext, host: str = "0.0.0.0", port: int = 0
    ) -> None:
        self.app, self.context, self.host = app, context, host
        self.sock = socket.create_server((host, port), reuse_port=False)
        self.port: int = self.sock.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(app, access_log=None)
        self._thread = threading.Thread(target=self._loop.run_forever, name="tailor-webhook")

    def start(self) -> WebhookServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=30)
        return self

    async def _serve(self) -> None:
        await self._runner.setup()
        await web.SockSite(self._runner, self.sock, ssl_context=self.context).start()

    def call(self, function: Callable[[], T]) -> T:
        """`function()` run on the server's loop thread, where handshakes read the SSL context.

        OpenSSL does not allow changing an SSL_CTX while another thread makes connections
        from it, so a certificate swap goes through here.
        """

        async def run() -> T:
            return function()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def stop(self) -> None:
        """Stop listening, finish the loop and its thread."""
        if self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            future.result(timeout=30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
        self._loop.close()
        self.sock.close()
