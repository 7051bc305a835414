"""`tailor admission`: the mutating admission webhook that sizes pods as they are created.

Everything that can be checked is checked before it listens (the certificate and
key load together, the port is free, the kubeconfig loads), so a typo is exit 2,
never a webhook the API server cannot reach. Once serving, nothing ends it but
SIGTERM / SIGINT: an unreachable API server leaves the last lists in use, and a
rotated certificate that does not load leaves the last one served.
"""

from __future__ import annotations

import logging
import signal
import socket
import ssl
import threading
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from admission.certificates import CertificateReloader
from admission.metrics import ReviewMetrics
from admission.periodic import Periodic
from admission.registration import Endpoint, Registrar, read_ca
from admission.server import listening_socket
from admission.watch import WATCH_SECONDS
from admission.workers import Supervisor, WorkerConfig
from tailor.cli.election import status_lease_flag
from tailor.cli.service import (
    IgnoredNamespaces,
    MetricsPort,
    VpaNamespace,
    duration_flag,
    namespace_scope,
    namespaced_name_flag,
    serve_telemetry,
    service_telemetry,
)
from tailor.kube import ClusterError, api_client_from
from tailor.lease import ApiLease
from tailor.quantity import Quantity, QuantityError
from tailor.status_lease import RENEW_INTERVAL, STATUS_LEASE, StatusHeartbeat
from tailor.telemetry import DEFAULT_PORTS

LOG = logging.getLogger("tailor.admission")


def _readable(path: Path, option: str) -> Path:
    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file", param_hint=option)
    return path


def registration_target(
    service: str, port: int, url: str | None, ca_file: Path | None, timeout: str
) -> tuple[Endpoint, Path, int]:
    """What --register-webhook registers: checked now (exit 2), not at the first review."""
    if ca_file is None:
        raise typer.BadParameter("--register-webhook needs --ca-file", param_hint="--ca-file")
    try:
        read_ca(_readable(ca_file, "--ca-file"))
    except (OSError, ValueError) as error:
        raise typer.BadParameter(str(error), param_hint="--ca-file") from None
    span = duration_flag(timeout, "--webhook-timeout", "1s")
    if span.total_seconds() > 30 or span.total_seconds() % 1:
        raise typer.BadParameter("whole seconds from 1s to 30s", param_hint="--webhook-timeout")
    namespace, name = namespaced_name_flag(service, "--webhook-service")
    if url is not None and not url.startswith("https://"):
        raise typer.BadParameter("must be an https:// URL", param_hint="--webhook-url")
    endpoint = Endpoint(None if url else (namespace, name), port, url, home=namespace)
    return endpoint, ca_file, int(span.total_seconds())


def _register(registrar: Registrar) -> None:
    try:
        registrar.check()
    except ClusterError as error:  # RBAC or an API server away: the next check retries
        LOG.error("%s; trying again at the next certificate check", error)


def admission_command(
    tls_cert: Annotated[
        Path, typer.Option("--tls-cert", help="PEM serving certificate (the chain).")
    ],
    tls_key: Annotated[Path, typer.Option("--tls-key", help="PEM private key of the certificate.")],
    port: Annotated[int, typer.Option(min=1, max=65535, help="HTTPS port.")] = 8443,
    address: Annotated[str, typer.Option(help="Address to listen on.")] = "0.0.0.0",
    kubeconfig: Annotated[
        Path | None, typer.Option(help="Kubeconfig (default: in-cluster, else ~/.kube/config).")
    ] = None,
    refresh: Annotated[
        str,
        typer.Option(
            help="How often VPAs and LimitRanges are re-listed in full, a safety net: "
            "changes arrive through a watch at once."
        ),
    ] = "5m",
    cert_check: Annotated[
        str,
        typer.Option(help="How often the certificate and key files are re-read (rotation)."),
    ] = "30s",
    metrics_port: MetricsPort = DEFAULT_PORTS["admission"],
    vpa_object_namespace: VpaNamespace = None,
    ignored_vpa_object_namespaces: IgnoredNamespaces = None,
    register_webhook: Annotated[
        bool,
        typer.Option(
            "--register-webhook",
            help="Create or update the MutatingWebhookConfiguration itself (needs --ca-file).",
        ),
    ] = False,
    ca_file: Annotated[
        Path | None,
        typer.Option("--ca-file", help="PEM CA of the serving certificate, for the caBundle."),
    ] = None,
    webhook_service: Annotated[
        str, typer.Option(help="The Service NS/NAME the API server calls the webhook through.")
    ] = "kube-tailor/tailor-admission",
    webhook_port: Annotated[int, typer.Option(min=1, max=65535, help="That Service's port.")] = 443,
    webhook_url: Annotated[
        str | None,
        typer.Option(help="Register an https:// URL instead of the Service (outside a cluster)."),
    ] = None,
    webhook_timeout: Annotated[
        str, typer.Option(help="How long the API server waits for a review (1s to 30s).")
    ] = "5s",
    allow_hpa_conflicts: Annotated[
        bool,
        typer.Option(
            "--allow-hpa-conflicts",
            help="Also set what an HPA scales on (cpu or memory utilization); no HPA is read.",
        ),
    ] = False,
    max_allowed_cpu_boost: Annotated[
        str | None,
        typer.Option(help="The most CPU a startup boost gives a container (e.g. 4 or 1500m)."),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(min=1, max=64, help="Worker processes accepting reviews on the one port."),
    ] = 2,
    worker_memory: Annotated[
        str,
        typer.Option(help="A worker holding more resident memory is replaced (after a burst)."),
    ] = "256Mi",
    status_lease: Annotated[
        str | None,
        typer.Option(
            help="The Lease NS/NAME renewed every 10 s while serving; `tailor follow` evicts only "
            f"while it is fresh [default: the pod's namespace, else kube-tailor, /{STATUS_LEASE}]."
        ),
    ] = None,
) -> None:
    """Serve the webhook: pods being created get their VPA's recommendation (POST /mutate)."""
    every = duration_flag(refresh, "--refresh", "100ms").total_seconds()
    heartbeat_lease = status_lease_flag(status_lease, "--status-lease")
    most_boost = _cpu_flag(max_allowed_cpu_boost, "--max-allowed-cpu-boost")
    scope = namespace_scope(vpa_object_namespace, ignored_vpa_object_namespaces)
    cert_every = duration_flag(cert_check, "--cert-check", "1s").total_seconds()
    memory_limit = _memory_flag(worker_memory, "--worker-memory")
    try:
        CertificateReloader(_readable(tls_cert, "--tls-cert"), _readable(tls_key, "--tls-key"))
    except (ssl.SSLError, OSError) as error:
        raise typer.BadParameter(f"cannot use the certificate and key: {error}") from error
    endpoint = (
        registration_target(webhook_service, webhook_port, webhook_url, ca_file, webhook_timeout)
        if register_webhook
        else None
    )
    # Passes: every list and every watch call the server ends on schedule (WATCH_SECONDS).
    period = timedelta(seconds=min(every, WATCH_SECONDS))
    telemetry = service_telemetry("admission", metrics_port, period)
    try:
        client = api_client_from(kubeconfig)
    except ClusterError as error:
        raise typer.BadParameter(str(error), param_hint="--kubeconfig") from error
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        sock = listening_socket(address, port)
    except OSError as error:
        raise typer.BadParameter(f"cannot listen on {address}:{port}: {error}") from error
    config = WorkerConfig(
        tls_cert, tls_key, kubeconfig, every, cert_every, not allow_hpa_conflicts, scope, most_boost
    )
    metrics = ReviewMetrics(telemetry) if telemetry is not None else None
    record = telemetry.record_pass if telemetry is not None else None
    server = Supervisor(config, sock, workers, metrics, record, memory_limit)
    try:
        metrics_server = serve_telemetry(telemetry, metrics_port)
    except typer.BadParameter:
        sock.close()
        raise
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    registering: Periodic | None = None
    if endpoint is not None:
        registrar = Registrar(client, *endpoint)
        registering = Periodic(
            lambda: _register(registrar),
            cert_every,
            name="tailor-registration",
            failure="webhook registration failed",
        )
    heartbeat = StatusHeartbeat(ApiLease(client, *heartbeat_lease), socket.gethostname())
    beating = Periodic(
        heartbeat.beat,
        RENEW_INTERVAL.total_seconds(),
        name="tailor-status-lease",
        failure="status Lease renewal failed",
    )
    server.start(wait=None)  # the workers list the cluster first; SIGTERM may come meanwhile
    port = sock.getsockname()[1]
    LOG.info(
        "admission webhook listening on https://%s:%d/mutate (%d workers)", address, port, workers
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
    sock.close()
    if metrics_server is not None:
        metrics_server.stop()


def _memory_flag(text: str, option: str) -> int:
    """A positive memory quantity flag in bytes (exit 2 otherwise)."""
    try:
        amount = Quantity.parse(text)
    except QuantityError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None
    if amount.milli_value() <= 0:
        raise typer.BadParameter(f"must be above 0, got {text!r}", param_hint=option)
    return amount.milli_value() // 1000


def _cpu_flag(text: str | None, option: str) -> Quantity | None:
    """A positive CPU quantity flag (exit 2 otherwise)."""
    if text is None:
        return None
    try:
        amount = Quantity.parse(text)
    except QuantityError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None
    if amount.milli_value() <= 0:
        raise typer.BadParameter(f"must be above 0, got {text!r}", param_hint=option)
    return amount
