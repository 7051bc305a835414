"""The webhook's requests: POST /mutate (AdmissionReview v1) and GET /healthz, as an RSGI app.

HTTP and TLS are granian's (Rust), run by `admission.edge`; this module is what each
request does once its headers are in. A review is decided on the event loop when the
cluster view has what it needs in memory (the common case: everything comes from the
watches), and in a worker thread, within the review's budget, when a controller must be
read from the API server. A review that cannot be answered in time is answered
"allowed, unchanged" at once (`shed`: the loop is too far behind; `timeout`: the read
outlasted the budget), since with failurePolicy Ignore the API server would admit the
pod unsized anyway, only later.

The body is read here, so its limits are here: a Content-Length is required (411
without: the API server always sends one) and may not pass `max_body_bytes` (413,
refused unread); a body not in within `body_seconds` is answered 408 and its
connection closed (granian has no body deadline of its own).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from granian.rsgi import ProtocolClosed as RSGIProtocolClosed
from granian.rsgi import ProtocolError as RSGIProtocolError

from admission.admit import ClusterView, admit, needs_api
from admission.connections import ConnectionLimits
from admission.metrics import MetricsSink
from admission.review import AdmissionRequest, ReviewError, Verdict, parse_review, review_response
from admission.verdicts import Revised, VerdictCache
from tailor.quantity import Quantity
from tailor.scope import EVERYWHERE, NamespaceScope

__all__ = ["ReviewApp", "ReviewLimits", "make_app"]

LOG = logging.getLogger("tailor.admission")
Listener = Callable[[AdmissionRequest, Verdict], None]
_LAG_TICK, _QUIET_TICK = 0.01, 0.1
_JSON = [("content-type", "application/json")]
_TEXT = [("content-type", "text/plain; charset=utf-8")]
_CLOSE = [*_TEXT, ("connection", "close")]


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


class _Refused(Exception):
    """A request answered with `status` and `text` instead of a review; `close`: the
    connection cannot serve another request (its body was not read)."""

    def __init__(self, status: int, text: str, close: bool = False) -> None:
        super().__init__(text)
        self.status, self.text, self.close = status, text, close


class ReviewApp:
    """The webhook's RSGI application and what its requests share: the loop's lag, the
    turns for large bodies and for API reads, the verdict cache.

    granian calls `__rsgi__` for each request on the event loop the server runs it on
    (`admission.edge`), `__rsgi_init__` / `__rsgi_del__` when it starts and stops."""

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
        self.under_way = 0  # requests in the handler now (the server waits for them to end)
        self.waiting_on_api = 0
        self.verdicts = VerdictCache(view) if isinstance(view, Revised) else None
        self._large_bodies: asyncio.Semaphore | None = None
        self._reading: dict[asyncio.Task[Any], float] = {}  # body reads and their deadlines
        self._late: set[asyncio.Task[Any]] = set()  # ... cancelled for passing it
        self._background: list[asyncio.Task[None]] = []

    # -- RSGI --------------------------------------------------------------------------

    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._large_bodies = asyncio.Semaphore(self.limits.max_large_bodies)
        self._background = [
            loop.create_task(self.lag.follow()),
            loop.create_task(self._cut_late_bodies()),
        ]

    def __rsgi_del__(self, loop: asyncio.AbstractEventLoop) -> None:
        for task in self._background:
            task.cancel()

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        # always HTTP: the websocket protocol is off (admission.edge)
        route = (scope.method, scope.path)
        if route == ("POST", "/mutate"):
            self.under_way += 1
            try:
                await self.mutate(scope, proto)
            finally:
                self.under_way -= 1
        elif route == ("GET", "/healthz"):
            if self.ready():
                proto.response_str(200, _TEXT, "ok\n")
            else:
                proto.response_str(503, _TEXT, "VPAs and LimitRanges not loaded yet\n")
        elif scope.path in ("/mutate", "/healthz"):
            proto.response_str(405, _TEXT, "method not allowed\n")
        else:
            proto.response_str(404, _TEXT, "not found\n")

    # -- a review ----------------------------------------------------------------------

    async def mutate(self, scope: Any, proto: Any) -> None:
        begun = time.monotonic()
        self.lag.seen()
        try:
            review = await self.read(scope, proto, begun)
        except _Refused as refused:
            proto.response_str(refused.status, _CLOSE if refused.close else _TEXT, refused.text)
            return
        except ReviewError as error:
            self.record("bad_request", begun)
            proto.response_str(400, _TEXT, f"{error}\n")
            return
        except (RSGIProtocolClosed, RSGIProtocolError):
            return  # the client went away before its body was in: nobody to answer
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
        proto.response_bytes(200, _JSON, orjson.dumps(review_response(review, verdict)))

    async def read(self, scope: Any, proto: Any, begun: float) -> AdmissionRequest:
        """The parsed review; its headers were in at `begun`. The size is checked before a
        byte of the body is read; a large body waits for one of `max_large_bodies` turns,
        so no crowd of them is held in memory at once (the others stay in their sockets).
        The wait counts against the body deadline, which runs from `begun`."""
        limits = self.limits
        size = _content_length(scope.headers.get("content-length"), limits.max_body_bytes)
        if size <= limits.large_body_bytes or self._large_bodies is None:
            return parse_review(await self.body(proto, begun))
        try:
            await asyncio.wait_for(self._large_bodies.acquire(), limits.budget_seconds)
        except TimeoutError:
            raise _Refused(503, "too many large reviews at once\n", close=True) from None
        try:
            return parse_review(await self.body(proto, begun))
        finally:
            self._large_bodies.release()

    async def body(self, proto: Any, begun: float) -> bytes:
        """The whole body, within `body_seconds` of the headers (`begun`; granian has no
        body deadline: slowloris).

        The deadline is kept in `_reading` and enforced by `_cut_late_bodies`, not by a
        timer per request: `asyncio.wait_for` or `asyncio.timeout` cost about 50 µs a
        request (a task or a timer handle made and cancelled), a tenth of a review."""
        task = asyncio.current_task()
        if task is None:  # nothing to cancel: a slow body would be waited for without end
            raise RuntimeError("the body deadline needs each request run as an asyncio task")
        self._reading[task] = begun + self.limits.connections.body_seconds
        try:
            return bytes(await proto())
        except asyncio.CancelledError:
            if task not in self._late:
                raise
            task.uncancel()
            if self.metrics is not None:
                self.metrics.connection_cut("body_timeout")
            raise _Refused(408, "the body did not arrive in time\n", close=True) from None
        finally:
            self._reading.pop(task, None)
            self._late.discard(task)

    async def _cut_late_bodies(self) -> None:
        """Cancel each body read past its deadline, within a fifth of the deadline."""
        tick = min(0.25, self.limits.connections.body_seconds / 5)
        while True:
            await asyncio.sleep(tick)
            now = time.monotonic()
            for task, deadline in list(self._reading.items()):
                if deadline < now and task not in self._late:
                    self._late.add(task)
                    task.cancel()

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


def _content_length(header: str | None, most: int) -> int:
    """The body's announced size; _Refused when missing or past `most`. hyper has already
    answered 400 to one that is not a number (or two that differ), so it parses."""
    if header is None:
        raise _Refused(411, "a Content-Length is required\n", close=True)
    size = int(header)
    if size < 0 or size > most:
        raise _Refused(413, f"body of {size} bytes; at most {most} are read\n", close=True)
    return size


def make_app(
    view: ClusterView,
    ready: Callable[[], bool],
    listener: Listener | None = None,
    metrics: MetricsSink | None = None,
    scope: NamespaceScope = EVERYWHERE,
    max_cpu_boost: Quantity | None = None,
    limits: ReviewLimits = ReviewLimits(),
) -> ReviewApp:
    """The RSGI application; `listener` sees every verdict (logging, tests)."""
    return ReviewApp(view, ready, listener, metrics, scope, max_cpu_boost, limits)


def _pod_name(review: AdmissionRequest) -> str:
    metadata = review.obj.get("metadata") if isinstance(review.obj, dict) else None
    if not isinstance(metadata, dict):
        return "?"
    return str(metadata.get("name") or f"{metadata.get('generateName') or ''}*")
