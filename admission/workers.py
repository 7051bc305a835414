"""The webhook as several worker processes accepting from one socket (pre-fork).

One Python process decides reviews on one core: every TLS handshake, every body and
every decision wait on one event loop. The parent opens the listening socket once
and hands it to `workers` spawned processes; the kernel gives each new connection to
whichever worker accepts first. Each worker is a whole webhook (its own watches of
the cluster, its own certificate check), so a worker that dies loses nothing another
needs; the parent starts a new one.

Memory: a worker's large blocks are mapped one by one, so that freeing them gives the
memory back (`_worker_environment`). Python rarely gives back the rest
of what a burst made it take, so a worker whose resident memory passes `memory_limit`
is replaced: a new worker is started, and once it serves, the old one stops accepting,
answers the reviews it holds and exits. The socket stays open in the parent throughout,
so no connection is refused while they change places.

Metrics and Events: each worker sends what it recorded (`admission.metrics.Batch`), its
watches' passes and the Events it counted (`admission.events.RelayedEvents`) to the
parent over a pipe every quarter second; the parent replays the metrics into its own
registry, which its /metrics port serves, and writes the Events.
"""

from __future__ import annotations

import copy
import logging
import multiprocessing.connection
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

import psutil

from admission.events import Relayed, RelayedEvents
from admission.metrics import Batch, MetricsSink, replay
from admission.server import ReviewLimits
from tailor.quantity import Quantity
from tailor.scope import EVERYWHERE, NamespaceScope

LOG = logging.getLogger("tailor.admission")
_SEND_SECONDS = 0.25
_CHECK_SECONDS = 1.0
READY_SECONDS = 120.0  # a worker lists the whole cluster before it serves


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker needs to serve (sent to it when it is spawned)."""

    tls_cert: Path
    tls_key: Path
    kubeconfig: Path | None = None
    refresh_seconds: float = 300.0
    cert_check_seconds: float = 30.0
    read_hpas: bool = True
    scope: NamespaceScope = EVERYWHERE
    max_cpu_boost: Quantity | None = None
    limits: ReviewLimits = field(default_factory=ReviewLimits)


def worker_main(config: WorkerConfig, sock: socket.socket, channel: Connection) -> None:
    """A worker's life: load the cluster, serve on `sock` until SIGTERM, report to `channel`."""
    # imported here: the parent process never needs the server's dependencies loaded twice
    import kubernetes.client

    from admission.certificates import CertificateReloader
    from admission.cluster_cache import ClusterCache
    from admission.edge import WebhookServer
    from admission.events import events_listener
    from admission.periodic import Periodic
    from admission.server import make_app
    from tailor.kube import ClusterError, api_client_from

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    batch = Batch()
    relayed = RelayedEvents()
    passes: list[tuple[bool, float]] = []
    certificates = CertificateReloader(config.tls_cert, config.tls_key)
    loaded = api_client_from(config.kubeconfig)
    configuration = copy.copy(loaded.configuration)
    configuration.retries = 0  # a read in a review has its budget: no hidden retries
    client = kubernetes.client.ApiClient(configuration)
    loaded.close()
    cache = ClusterCache(
        client,
        config.refresh_seconds,
        read_hpas=config.read_hpas,
        metrics=batch,
        record=lambda ok, seconds: passes.append((ok, seconds)),
    )
    try:
        cache.refresh()
    except ClusterError as error:  # serve anyway: pods are admitted unchanged until it loads
        LOG.error("%s; listing again in the background", error)
    app = make_app(
        cache,
        lambda: cache.loaded,
        events_listener(relayed),  # written by the parent
        metrics=batch,
        scope=config.scope,
        max_cpu_boost=config.max_cpu_boost,
        limits=config.limits,
    )
    server = WebhookServer(app, certificates, sock=sock).start()
    cache.start()
    checker = Periodic(
        certificates.check,
        config.cert_check_seconds,
        name="tailor-certificates",
        failure="certificate check failed; still serving the previous certificate",
    ).start()
    try:
        channel.send(("ready", os.getpid()))
    except OSError:
        stopping.set()

    def send() -> None:
        taken, passes[:] = list(passes), []
        try:
            channel.send(("records", batch.take(), taken, relayed.take()))
        except OSError:  # the parent is gone (even kill -9): no orphan keeps the port
            stopping.set()

    while not stopping.wait(_SEND_SECONDS):
        send()
    server.stop()  # answers the reviews it holds first
    checker.stop()
    send()
    channel.close()
    logging.shutdown()
    # the watches' threads and the API client's pool would be joined at interpreter exit,
    # one blocked read at a time (seconds): everything a worker owes is done by now
    os._exit(0)


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    channel: Connection
    ready: bool = False
    retiring: bool = False


class Supervisor:
    """Starts `count` workers on `sock`, replaces any that dies or grows past `memory_limit`
    bytes, and relays their metrics to `sink`, their passes to `record_pass` and their
    Events to `record_events`."""

    def __init__(
        self,
        config: WorkerConfig,
        sock: socket.socket,
        count: int,
        sink: MetricsSink | None = None,
        record_pass: Callable[[bool, float], None] | None = None,
        memory_limit: int | None = None,
        record_events: Callable[[list[Relayed]], None] | None = None,
    ) -> None:
        self.config, self.sock, self.count = config, sock, count
        self.sink, self.record_pass, self.memory_limit = sink, record_pass, memory_limit
        self.record_events = record_events
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tailor-workers", daemon=True)
        self.recycled = 0

    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [w.process.pid for w in self._workers]

    def ready(self) -> bool:
        """Whether `count` workers serve."""
        with self._lock:
            return sum(w.ready and not w.retiring for w in self._workers) >= self.count

    def start(self, wait: float | None = READY_SECONDS) -> Supervisor:
        """Start the workers; with `wait`, return once all serve (TimeoutError past it)."""
        for _ in range(self.count):
            self._spawn()
        self._thread.start()
        if wait is not None:
            deadline = time.monotonic() + wait
            while not self.ready():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the webhook's workers did not start within {wait:.0f}s")
                time.sleep(0.05)
        return self

    def _spawn(self) -> _Worker:
        """A new interpreter running this module (not the parent's __main__, which for
        `tailor` would import the whole CLI), given the socket and a pipe by descriptor."""
        receiving, sending = os.pipe()
        listening = self.sock.fileno()
        process = subprocess.Popen(
            [sys.executable, "-m", "admission.workers", str(listening), str(sending)],
            stdin=subprocess.PIPE,
            pass_fds=(listening, sending),
            env=_worker_environment(),
        )
        os.close(sending)  # the worker holds the other end: EOF here when it exits
        assert process.stdin is not None
        process.stdin.write(pickle.dumps(self.config))
        process.stdin.close()
        worker = _Worker(process, Connection(receiving, writable=False))
        with self._lock:
            self._workers.append(worker)
        return worker

    def _run(self) -> None:
        checked = time.monotonic()
        while not self._stopping.is_set():
            with self._lock:
                channels = {w.channel: w for w in self._workers}
            for channel in multiprocessing.connection.wait(list(channels), timeout=_SEND_SECONDS):
                self._receive(channels[channel])  # type: ignore[index]
            if time.monotonic() - checked >= _CHECK_SECONDS:
                checked = time.monotonic()
                self._check_memory()

    def _receive(self, worker: _Worker) -> None:
        try:
            message = worker.channel.recv()
        except (EOFError, OSError):
            self._gone(worker)
            return
        if message[0] == "ready":
            worker.ready = True
            self._retire_replaced()
        elif message[0] == "records":
            if self.sink is not None:
                replay(message[1], self.sink)
            if self.record_pass is not None:
                for succeeded, seconds in message[2]:
                    self.record_pass(succeeded, seconds)
            if self.record_events is not None and message[3]:
                self.record_events(message[3])

    def _gone(self, worker: _Worker) -> None:
        _wait(worker.process, 5)
        with self._lock:
            self._workers.remove(worker)
        worker.channel.close()
        if not worker.retiring and not self._stopping.is_set():
            LOG.error(
                "webhook worker %s exited (code %s); starting another",
                worker.process.pid,
                worker.process.returncode,
            )
            self._spawn()

    def _check_memory(self) -> None:
        if self.memory_limit is None:
            return
        with self._lock:
            serving = [w for w in self._workers if w.ready and not w.retiring]
            starting = any(not w.ready for w in self._workers)
        if starting:
            return  # one replacement at a time
        for worker in serving:
            rss = worker_rss(worker.process.pid)
            if rss is not None and rss > self.memory_limit:
                LOG.warning(
                    "webhook worker %s holds %d MiB (limit %d MiB); replacing it",
                    worker.process.pid,
                    rss >> 20,
                    self.memory_limit >> 20,
                )
                worker.retiring = True  # retired once its replacement serves
                self.recycled += 1
                self._spawn()
                return

    def _retire_replaced(self) -> None:
        with self._lock:
            serving = [w for w in self._workers if w.ready and not w.retiring]
            retiring = [w for w in self._workers if w.retiring]
        if len(serving) >= self.count:
            for worker in retiring:
                if worker.process.poll() is None:
                    worker.process.terminate()

    def stop(self) -> None:
        """Stop every worker (each answers the reviews it holds) and the relay."""
        self._stopping.set()
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.terminate()
        for worker in workers:
            if not _wait(worker.process, 30):
                worker.process.kill()
                worker.process.wait()
        self._thread.join(timeout=5)
        for worker in workers:  # what they sent last
            while not worker.channel.closed and worker.channel.poll():
                try:
                    self._receive(worker)
                except (EOFError, OSError):
                    break
            worker.channel.close()


def _worker_environment() -> dict[str, str]:
    """The parent's environment, with glibc's malloc told to map every block past 64 KiB
    on its own (unless the operator set it). With the default sliding threshold a freed
    large block raises the threshold and the next ones come from the heap, never given
    back: when TLS was uvloop's, each connection's 256 KiB read buffer left a worker
    ~90 MiB larger for good after 600 connections. granian's own buffers (TLS, HTTP) come
    from the jemalloc linked into it, which returns freed pages by itself (its decay);
    what this still serves is Python's: large review bodies and their parsed objects."""
    return {"MALLOC_MMAP_THRESHOLD_": str(64 * 1024), **os.environ}


def _wait(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether `process` ended within `seconds` (reaped)."""
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def worker_rss(pid: int) -> int | None:
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        return None


def _main(argv: list[str]) -> None:
    """`python -m admission.workers SOCKET_FD CHANNEL_FD`, the config pickled on stdin."""
    config = pickle.loads(sys.stdin.buffer.read())
    sock = socket.socket(fileno=int(argv[0]))
    worker_main(config, sock, Connection(int(argv[1]), readable=False))


if __name__ == "__main__":
    _main(sys.argv[1:])
