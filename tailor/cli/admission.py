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
import ssl
import threading
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from admission.certificates import CertificateReloader
from admission.kube import ClusterCache
from admission.periodic import Periodic
from admission.server import ReviewMetrics, WebhookServer, make_app
from admission.watch import WATCH_SECONDS
from tailor.cli.service import MetricsPort, duration_flag, serve_telemetry, service_telemetry
from tailor.kube import ClusterError, api_client_from
from tailor.telemetry import DEFAULT_PORTS

LOG = logging.getLogger("tailor.admission")


def _readable(path: Path, option: str) -> Path:
    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file", param_hint=option)
    return path


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
) -> None:
    """Serve the webhook: pods being created get their VPA's recommendation (POST /mutate)."""
    every = duration_flag(refresh, "--refresh", "100ms").total_seconds()
    cert_every = duration_flag(cert_check, "--cert-check", "1s").total_seconds()
    try:
        certificates = CertificateReloader(
            _readable(tls_cert, "--tls-cert"), _readable(tls_key, "--tls-key")
        )
    except (ssl.SSLError, OSError) as error:
        raise typer.BadParameter(f"cannot use the certificate and key: {error}") from error
    # Passes: every list and every watch call the server ends on schedule (WATCH_SECONDS).
    period = timedelta(seconds=min(every, WATCH_SECONDS))
    telemetry = service_telemetry("admission", metrics_port, period)
    try:
        cache = ClusterCache(api_client_from(kubeconfig), every, telemetry)
    except ClusterError as error:
        raise typer.BadParameter(str(error), param_hint="--kubeconfig") from error
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        cache.refresh()
    except ClusterError as error:  # serve anyway: pods are admitted unchanged until it loads
        LOG.error("%s; listing again in the background", error)
    try:
        metrics = ReviewMetrics(telemetry) if telemetry is not None else None
        app = make_app(cache, lambda: cache.loaded, metrics=metrics)
        server = WebhookServer(app, certificates.context, address, port)
    except OSError as error:
        raise typer.BadParameter(f"cannot listen on {address}:{port}: {error}") from error
    try:
        metrics_server = serve_telemetry(telemetry, metrics_port)
    except typer.BadParameter:
        server.sock.close()
        raise
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    checker = Periodic(
        lambda: server.call(certificates.check),  # swapped where handshakes happen
        cert_every,
        name="tailor-certificates",
        failure="certificate check failed; still serving the previous certificate",
    )
    cache.start()
    server.start()
    checker.start()
    LOG.info("admission webhook listening on https://%s:%d/mutate", address, server.port)
    while not stopping.wait(1.0):
        pass
    LOG.info("stopping")
    checker.stop()
    server.stop()
    cache.stop()
    if metrics_server is not None:
        metrics_server.stop()
