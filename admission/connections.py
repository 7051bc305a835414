"""Per-connection limits the HTTP server lacks: a header, a body and an idle deadline, and a cap.

aiohttp closes a keep-alive connection that stays idle, but a client that sends a
request's headers or body a byte at a time, or opens a TLS connection and says
nothing, is held forever (slowloris). `GuardedProtocols` wraps aiohttp's protocol
factory: each connection gets a deadline for the phase it is in (idle until its first
byte, then its headers, then its body), the handler moves it between phases, and a
connection past its deadline is cut. Connections beyond `max_connections` are cut as
they arrive. The TLS handshake has its own timeout (`ssl_handshake_timeout` where
the server is created, `admission.server`).

Hand-written: neither aiohttp nor asyncio offer header or body read deadlines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

IDLE, HEADERS, BODY, BUSY = "idle", "headers", "body", "busy"
_EARLY = 0.002  # a loop may run a timer up to its clock's resolution early


@dataclass(frozen=True)
class ConnectionLimits:
    """Deadlines in seconds for each phase of a connection, and how many may be open."""

    header_seconds: float = 5.0
    body_seconds: float = 10.0
    idle_seconds: float = 60.0
    handshake_seconds: float = 5.0
    max_connections: int = 1000


class _Guarded(asyncio.Protocol):
    """One connection: forwards everything to aiohttp's protocol, cuts it past a deadline."""

    def __init__(self, inner: asyncio.Protocol, guard: GuardedProtocols) -> None:
        self.inner, self.guard = inner, guard
        self.transport: asyncio.Transport | None = None
        self.phase = IDLE
        self.deadline: float | None = None  # loop time the phase must end by (None: BUSY)
        self._timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.guard.opened(self)
        self.inner.connection_made(transport)
        if len(self.guard.open) > self.guard.limits.max_connections:
            self.guard.count("too_many")
            transport.abort()  # type: ignore[attr-defined]
            return
        self.enter(IDLE)

    def data_received(self, data: bytes) -> None:
        if self.phase == IDLE:
            self.enter(HEADERS)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        self.guard.closed(self)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    # -- phases ------------------------------------------------------------------------

    def enter(self, phase: str) -> None:
        """Start `phase` with its deadline (BUSY has none: the review's budget bounds it).

        One timer per connection, moved only when the new deadline comes before it: a
        request passes four phases, and scheduling and cancelling a timer for each cost
        more than the rest of the guard (docs/results/webhook.md). A timer that fires
        before the deadline of the phase by then looks again at that deadline."""
        self.phase = phase
        seconds = self.guard.phase_seconds.get(phase)
        if seconds is None:
            self.deadline = None
            return
        loop = asyncio.get_running_loop()
        self.deadline = deadline = loop.time() + seconds
        timer = self._timer
        if timer is None or timer.when() > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = loop.call_at(deadline, self._check)

    def _check(self) -> None:
        self._timer = None
        if self.deadline is None:
            return  # BUSY: armed again when the connection waits for its next request
        loop = asyncio.get_running_loop()
        if loop.time() < self.deadline - _EARLY:
            self._timer = loop.call_at(self.deadline, self._check)
            return
        self.guard.count(f"{self.phase}_timeout")
        if self.transport is not None:
            self.transport.abort()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class GuardedProtocols:
    """A protocol factory around aiohttp's (`runner.server`) that enforces `limits`.

    `phase(transport, ...)` is called by the request handler: BODY when a request's
    headers are in, BUSY once its body is read, IDLE once it is answered. `on_close`
    hears why a connection was cut (a metric).
    """

    def __init__(
        self,
        factory: Callable[[], Any] | None,
        limits: ConnectionLimits,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self.factory, self.limits, self.on_close = factory, limits, on_close
        self.open: dict[object, _Guarded] = {}
        self.phase_seconds = {
            IDLE: limits.idle_seconds,
            HEADERS: limits.header_seconds,
            BODY: limits.body_seconds,
        }

    def __call__(self) -> _Guarded:
        if self.factory is None:
            raise RuntimeError("GuardedProtocols used before the server set its factory")
        return _Guarded(self.factory(), self)

    def opened(self, connection: _Guarded) -> None:
        self.open[connection.transport] = connection

    def closed(self, connection: _Guarded) -> None:
        self.open.pop(connection.transport, None)

    def count(self, reason: str) -> None:
        if self.on_close is not None:
            self.on_close(reason)

    def phase(self, transport: object, phase: str) -> None:
        connection = self.open.get(transport)
        if connection is not None:
            connection.enter(phase)
