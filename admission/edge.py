"""The webhook's HTTPS edge: granian (HTTP/1.1 in hyper, TLS in rustls) serving the
RSGI app of `admission.server` on its own thread and event loop.

Why granian: every request through aiohttp on uvloop cost 0.84–0.96 ms of CPU before
the handler did anything, with TLS records and HTTP parsing run as Python objects and
callbacks; granian's trivial-handler floor was 0.36–0.60 ms on the same machine, the
Python side reduced to one coroutine per request (docs/results/webhook.md). RSGI, not
ASGI: no scope dict or message dicts per request.

granian is embedded at the level of its worker (`RSGIWorker`) rather than run as its own
server: the listening socket is the one the parent opened and shares with the other
worker processes (`admission.workers`), and the rest of the worker (the watches, the
metrics relay, the memory limit) stays ours. That worker API is granian's internal one,
hence the exact version pinned in pyproject.toml.

Certificates: rustls reads the pair once, when a granian worker starts, so a renewed pair
(`CertificateReloader`) replaces the granian worker on the same socket: the old one
answers the requests under way and closes its kept-alive connections, whose clients
connect again and get the new certificate.
Which connection limits granian enforces, and which not: `admission.connections`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import granian
import uvloop
from granian._futures import _future_watcher_wrapper, _new_cbscheduler
from granian._granian import RSGIWorker, SocketHolder, WorkerSignal
from granian.http import HTTP1Settings

from admission.certificates import CertificateReloader, staged
from admission.server import ReviewApp

__all__ = ["WebhookServer", "listening_socket"]

LOG = logging.getLogger("tailor.admission")
T = TypeVar("T")
GRANIAN = "2.8.7"  # the version pinned in pyproject.toml, whose worker API _Granian calls
_CANNOT_SERVE = 70  # EX_SOFTWARE: the supervisor starts another worker
_BACKLOG = 1024
_STOPPING_SECONDS = 0.1
# granian's type stubs describe an older signature than the 2.8.7 worker takes
_RSGI_WORKER: Any = RSGIWorker
_SOCKET_HOLDER: Any = SocketHolder


def require_granian(installed: str) -> None:
    """ImportError unless granian is the pinned version: `RSGIWorker` is granian's internal
    API, called with positional arguments, which another version may take in another
    order without complaint (a timeout where a thread count was meant)."""
    if installed != GRANIAN:
        raise ImportError(
            f"admission.edge needs granian {GRANIAN} (pinned in pyproject.toml), found "
            f"{installed}: check RSGIWorker's arguments against the new version, then the pin"
        )


require_granian(granian.__version__)


def listening_socket(host: str, port: int) -> socket.socket:
    """The listening socket, made before any worker starts (OSError: in use, bad address)."""
    sock = socket.create_server((host, port), backlog=_BACKLOG)
    sock.setblocking(False)
    return sock


class _Granian:
    """One granian worker serving `app` on a duplicate of `sock` with one certificate."""

    def __init__(
        self,
        app: ReviewApp,
        sock: socket.socket,
        pem: tuple[bytes, bytes],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        limits = app.limits.connections
        http1 = HTTP1Settings(header_read_timeout=int(limits.header_seconds * 1000))
        self.pem = pem
        self.signal = WorkerSignal()
        descriptor = os.dup(sock.fileno())  # granian owns and closes its copy
        holder = _SOCKET_HOLDER(descriptor, False, _BACKLOG)  # fd, not a Unix socket
        # rustls reads the files on granian's thread once it serves (and aborts the process
        # if they are gone): they stay until this worker stops
        self._files = contextlib.ExitStack()
        cert_path, key_path = self._files.enter_context(staged(*pem))
        # on, the pair, no key password, TLS 1.2 or later, no client CA, no CRLs, no client
        # certificates
        tls: tuple[Any, ...] = (True, cert_path, key_path, None, "tls1.2", None, [], False)
        self.worker = _RSGI_WORKER(
            1,  # the id granian logs
            (None, holder),
            None,  # no IPC with a granian parent
            1,  # Rust runtime threads: one core's worth of I/O
            1,  # Rust blocking threads
            1,  # Python blocking threads (unused by RSGI)
            30,  # their idle timeout
            limits.backpressure,
            "1",  # HTTP/1.1 only: the API server offers only http/1.1 to webhooks
            http1,
            None,
            False,  # no websockets
            None,  # no static files
            *tls,
            (None, None),  # no granian metrics
        )
        handler = _future_watcher_wrapper(app.__rsgi__)
        # impl_asyncio=True: each request runs as an asyncio Task. The body deadline needs
        # it: `ReviewApp.body` enforces it by cancelling that task, and with granian's own
        # coroutine stepping (False) there is no task to cancel, so a slow body would be
        # waited for without end; `body` refuses to read then rather than do that
        self.scheduler = _new_cbscheduler(loop, handler, impl_asyncio=True)

    def serve(self, loop: asyncio.AbstractEventLoop) -> None:
        """Accept from now on (returns at once: granian's runtime has its own thread)."""
        self.worker.serve_str(self.scheduler, loop, self.signal)

    def stop(self) -> None:
        """Stop accepting; requests under way are still answered."""
        self.signal.set()
        self._files.close()


class WebhookServer:
    """The RSGI app served over TLS by granian, its handlers on this object's own thread
    and event loop; `start()` returns once it accepts.

    `sock` may be shared with other processes (the pre-fork workers accept from it).
    `certificates` is followed: each renewed pair it loads is served to new connections.
    """

    def __init__(
        self,
        app: ReviewApp,
        certificates: CertificateReloader,
        host: str = "0.0.0.0",
        port: int = 0,
        sock: socket.socket | None = None,
    ) -> None:
        self.app, self.certificates = app, certificates
        self.sock = sock if sock is not None else listening_socket(host, port)
        self.port: int = self.sock.getsockname()[1]
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tailor-webhook")
        self._granian: _Granian | None = None

    def start(self) -> WebhookServer:
        self._thread.start()
        self.call(lambda: self.app.__rsgi_init__(self._loop))
        self.call(self._serve_pair)
        self.certificates.renewed.append(self._renewed)
        return self

    def _serve_pair(self) -> None:
        self._granian = _Granian(self.app, self.sock, self.certificates.pem, self._loop)
        self._granian.serve(self._loop)

    def _renewed(self) -> None:
        """The renewed pair served: the granian worker is replaced.

        The new worker is built first, so a pair it cannot take raises with the old one
        still serving (`CertificateReloader` then keeps the old pair and tries again). The
        old one then stops and is given a moment to leave its accept loop (a connection
        it accepted while stopping would be dropped; connections meanwhile wait in the
        socket's backlog) before the new one serves. Should the new one fail to serve,
        the old pair is served again by a worker built afresh, and if even that fails
        the process exits, for the supervisor (`admission.workers`) to replace it: a
        worker alive but serving nothing would be sent its share of connections."""
        pem = self.certificates.pem
        fresh = self.call(lambda: _Granian(self.app, self.sock, pem, self._loop))
        old = self._granian
        if old is not None:
            self.call(old.stop)
            time.sleep(_STOPPING_SECONDS)
        try:
            self.call(lambda: fresh.serve(self._loop))
        except Exception:
            self.call(fresh.stop)
            if old is None:
                raise
            self._serve_again(old.pem)
            raise
        self._granian = fresh

    def _serve_again(self, pem: tuple[bytes, bytes]) -> None:
        """Serve `pem` again after its worker stopped; exit the process if that fails."""
        try:
            again = self.call(lambda: _Granian(self.app, self.sock, pem, self._loop))
            self.call(lambda: again.serve(self._loop))
        except Exception:
            LOG.critical("no certificate can be served any more; exiting", exc_info=True)
            logging.shutdown()
            os._exit(_CANNOT_SERVE)
        self._granian = again

    def call(self, function: Callable[[], T]) -> T:
        """`function()` run on the server's loop thread (at once when called from there)."""
        if threading.current_thread() is self._thread:
            return function()

        async def run() -> T:
            return function()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def stop(self) -> None:
        """Stop accepting, answer the requests under way, end the loop and its thread."""
        if self._renewed in self.certificates.renewed:
            self.certificates.renewed.remove(self._renewed)
        if self._thread.is_alive():
            if self._granian is not None:
                self.call(self._granian.stop)
            deadline = time.monotonic() + self.app.limits.budget_seconds + 1
            while self.app.under_way and time.monotonic() < deadline:
                time.sleep(0.01)
            self.call(lambda: self.app.__rsgi_del__(self._loop))
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
        self._loop.close()
        self.sock.close()
