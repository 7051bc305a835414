"""The webhook as a running service: workers on the listening socket, the optional
self-registration, the status Lease heartbeat, and an orderly stop on SIGTERM / SIGINT.

`tailor admission` checks every flag first (exit 2) and hands the checked pieces here;
this module only wires and runs them, so the command stays a parser.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from admission.events import RELAY_SECONDS, RelayedEvents, record_relayed, webhook_recorder
from admission.metrics import ReviewMetrics
from admission.periodic import Periodic
from admission.registration import Endpoint, Registrar
from admission.workers import Supervisor, WorkerConfig
from tailor.kube import ClusterError
from tailor.lease import ApiLease
from tailor.status_lease import RENEW_INTERVAL, StatusHeartbeat
from tailor.telemetry import ServiceTelemetry

LOG = logging.getLogger("tailor.admission")


@dataclass(frozen=True)
class WebhookService:
    """What the webhook serves with, every part already checked."""

    config: WorkerConfig
    workers: int
    worker_memory_bytes: int
    address: str
    status_lease: tuple[str, str]
    # what to register (--register-webhook): where, the CA file, the timeout, and whether
    # the caBundle is shared with other replicas' self-signed CAs (--self-signed-certs)
    endpoint: tuple[Endpoint, Path, int, bool] | None


def _register(registrar: Registrar) -> None:
    try:
        registrar.check()
    except ClusterError as error:  # RBAC or an API server away: the next check retries
        LOG.error("%s; trying again at the next certificate check", error)


def serve(
    service: WebhookService,
    client: Any,  # the kubernetes ApiClient, which only the named edges import
    sock: socket.socket,
    telemetry: ServiceTelemetry | None,
    stop_telemetry: Callable[[], None],
) -> None:
    """Serve until SIGTERM / SIGINT: workers first, then the registration (a review that
    arrives meanwhile waits on the socket), then the heartbeat once a worker serves."""
    metrics = ReviewMetrics(telemetry) if telemetry is not None else None
    record = telemetry.record_pass if telemetry is not None else None
    recorder = webhook_recorder(client)  # the workers' Events, gathered and written here
    gathered = RelayedEvents()
    relaying = Periodic(
        lambda: record_relayed(recorder, gathered.take()),
        RELAY_SECONDS,
        name="tailor-events-relay",
        failure="relaying the workers' Events failed",
    )
    server = Supervisor(
        service.config,
        sock,
        service.workers,
        metrics,
        record,
        service.worker_memory_bytes,
        gathered.add,
    )
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    every = service.config.cert_check_seconds
    registering: Periodic | None = None
    if service.endpoint is not None:
        registrar = Registrar(client, *service.endpoint)
        registering = Periodic(
            lambda: _register(registrar),
            every,
            name="tailor-registration",
            failure="webhook registration failed",
        )
    heartbeat = StatusHeartbeat(ApiLease(client, *service.status_lease), socket.gethostname())
    beating = Periodic(
        heartbeat.beat,
        RENEW_INTERVAL.total_seconds(),
        name="tailor-status-lease",
        failure="status Lease renewal failed",
    )
    server.start(wait=None)  # the workers list the cluster first; SIGTERM may come meanwhile
    relaying.start()
    port = sock.getsockname()[1]
    LOG.info(
        "admission webhook listening on https://%s:%d/mutate (%d workers)",
        service.address,
        port,
        service.workers,
    )
    if registering is not None:  # the socket listens: a review waits there for a worker
        _register(registrar)
        registering.start()
    serving = False
    while not stopping.wait(0.25):
        if not serving and server.ready():
            serving = True
            heartbeat.beat()  # serving now: the updater may evict from here on
            beating.start()
    LOG.info("stopping")
    beating.stop()
    if registering is not None:
        registering.stop()
    server.stop()
    relaying.stop()
    record_relayed(recorder, gathered.take())  # what the workers sent last (queued)
    recorder.close()  # written before the process exits, not cut off inside an API call
    sock.close()
    stop_telemetry()
