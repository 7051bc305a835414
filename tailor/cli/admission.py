"""`tailor admission`: the mutating admission webhook that sizes pods as they are created.

Everything that can be checked is checked before it listens (the certificate and
key load together, the port is free, the kubeconfig loads), so a typo is exit 2,
never a webhook the API server cannot reach. Once serving, nothing ends it but
SIGTERM / SIGINT: an unreachable API server leaves the last lists in use, and a
rotated certificate that does not load leaves the last one served.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from admission.certificates import CertificateReloader
from admission.edge import listening_socket
from admission.registration import Endpoint, read_ca
from admission.self_signed import SelfSignedPair, service_hosts, write_pair
from admission.service import WebhookService as Webhook
from admission.service import serve
from admission.watch import WATCH_SECONDS
from admission.workers import WorkerConfig
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
from tailor.quantity import Quantity, QuantityError
from tailor.status_lease import STATUS_LEASE
from tailor.telemetry import DEFAULT_PORTS, ServiceTelemetry

# what --register-webhook registers: (where, the CA file, timeout, shared by replicas)
Registering = tuple[Endpoint, Path, int, bool]


def _readable(path: Path, option: str) -> Path:
    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file", param_hint=option)
    return path


def registration_target(
    service: str, port: int, url: str | None, ca_file: Path | None, timeout: str
) -> Registering:
    """What --register-webhook registers: checked now (exit 2), not at the first review."""
    if ca_file is None:
        raise typer.BadParameter("--register-webhook needs --ca-file", param_hint="--ca-file")
    try:
        read_ca(_readable(ca_file, "--ca-file"))
    except (OSError, ValueError) as error:
        raise typer.BadParameter(str(error), param_hint="--ca-file") from None
    endpoint, seconds = _endpoint(service, port, url, timeout)
    return endpoint, ca_file, seconds, False


def _endpoint(service: str, port: int, url: str | None, timeout: str) -> tuple[Endpoint, int]:
    span = duration_flag(timeout, "--webhook-timeout", "1s")
    if span.total_seconds() > 30 or span.total_seconds() % 1:
        raise typer.BadParameter("whole seconds from 1s to 30s", param_hint="--webhook-timeout")
    namespace, name = namespaced_name_flag(service, "--webhook-service")
    if url is not None and not url.startswith("https://"):
        raise typer.BadParameter("must be an https:// URL", param_hint="--webhook-url")
    endpoint = Endpoint(None if url else (namespace, name), port, url, home=namespace)
    return endpoint, int(span.total_seconds())


def self_signed(
    service: str, port: int, url: str | None, timeout: str
) -> tuple[SelfSignedPair, Registering]:
    """--self-signed-certs: a new pair for the names the API server calls (the Service's,
    or the --webhook-url's host), and the registration its CA joins (shared by replicas)."""
    endpoint, seconds = _endpoint(service, port, url, timeout)
    if endpoint.url is not None:
        hosts: tuple[str, ...] = (str(urlsplit(endpoint.url).hostname),)
    else:
        assert endpoint.service is not None
        hosts = service_hosts(*endpoint.service)
    pair = write_pair(hosts)
    return pair, (endpoint, pair.ca_file, seconds, True)


TlsCert = Annotated[
    Path | None, typer.Option("--tls-cert", help="PEM serving certificate (the chain).")
]
TlsKey = Annotated[
    Path | None, typer.Option("--tls-key", help="PEM private key of the certificate.")
]
SelfSignedCerts = Annotated[
    bool,
    typer.Option(
        "--self-signed-certs",
        help="Make a CA and serving certificate at start (no --tls-cert / --tls-key) for "
        "--webhook-service's DNS names (or --webhook-url's host), and add the CA to the "
        "registration's caBundle, as --register-webhook does.",
    ),
]
Port = Annotated[int, typer.Option(min=1, max=65535, help="HTTPS port.")]
Address = Annotated[str, typer.Option(help="Address to listen on.")]
Kubeconfig = Annotated[
    Path | None, typer.Option(help="Kubeconfig (default: in-cluster, else ~/.kube/config).")
]
Refresh = Annotated[
    str,
    typer.Option(
        help="How often VPAs and LimitRanges are re-listed in full, a safety net: "
        "changes arrive through a watch at once."
    ),
]
CertCheck = Annotated[
    str, typer.Option(help="How often the certificate and key files are re-read (rotation).")
]
RegisterWebhook = Annotated[
    bool,
    typer.Option(
        "--register-webhook",
        help="Create or update the MutatingWebhookConfiguration itself (needs --ca-file).",
    ),
]
CaFile = Annotated[
    Path | None,
    typer.Option("--ca-file", help="PEM CA of the serving certificate, for the caBundle."),
]
WebhookService = Annotated[
    str, typer.Option(help="The Service NS/NAME the API server calls the webhook through.")
]
WebhookPort = Annotated[int, typer.Option(min=1, max=65535, help="That Service's port.")]
WebhookUrl = Annotated[
    str | None,
    typer.Option(help="Register an https:// URL instead of the Service (outside a cluster)."),
]
WebhookTimeout = Annotated[
    str, typer.Option(help="How long the API server waits for a review (1s to 30s).")
]
AllowHpaConflicts = Annotated[
    bool,
    typer.Option(
        "--allow-hpa-conflicts",
        help="Also set what an HPA scales on (cpu or memory utilization); no HPA is read.",
    ),
]
MaxCpuBoost = Annotated[
    str | None,
    typer.Option(help="The most CPU a startup boost gives a container (e.g. 4 or 1500m)."),
]
Workers = Annotated[
    int, typer.Option(min=1, max=64, help="Worker processes accepting reviews on the one port.")
]
WorkerMemory = Annotated[
    str, typer.Option(help="A worker holding more resident memory is replaced (after a burst).")
]
StatusLease = Annotated[
    str | None,
    typer.Option(
        help="The Lease NS/NAME renewed every 10 s while serving; `tailor follow` evicts only "
        f"while it is fresh [default: the pod's namespace, else kube-tailor, /{STATUS_LEASE}]."
    ),
]


def admission_command(
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    self_signed_certs: SelfSignedCerts = False,
    port: Port = 8443,
    address: Address = "0.0.0.0",
    kubeconfig: Kubeconfig = None,
    refresh: Refresh = "5m",
    cert_check: CertCheck = "30s",
    metrics_port: MetricsPort = DEFAULT_PORTS["admission"],
    vpa_object_namespace: VpaNamespace = None,
    ignored_vpa_object_namespaces: IgnoredNamespaces = None,
    register_webhook: RegisterWebhook = False,
    ca_file: CaFile = None,
    webhook_service: WebhookService = "kube-tailor/tailor-admission",
    webhook_port: WebhookPort = 443,
    webhook_url: WebhookUrl = None,
    webhook_timeout: WebhookTimeout = "5s",
    allow_hpa_conflicts: AllowHpaConflicts = False,
    max_allowed_cpu_boost: MaxCpuBoost = None,
    workers: Workers = 2,
    worker_memory: WorkerMemory = "256Mi",
    status_lease: StatusLease = None,
) -> None:
    """Serve the webhook: pods being created get their VPA's recommendation (POST /mutate)."""
    every = duration_flag(refresh, "--refresh", "100ms").total_seconds()
    scope = namespace_scope(vpa_object_namespace, ignored_vpa_object_namespaces)
    cert_every = duration_flag(cert_check, "--cert-check", "1s").total_seconds()
    target = (webhook_service, webhook_port, webhook_url, webhook_timeout)
    checked = _serving_pair(tls_cert, tls_key, ca_file, self_signed_certs, register_webhook, target)
    cert, key, registering, made = checked
    try:
        service = Webhook(
            WorkerConfig(
                cert, key, kubeconfig, every, cert_every, not allow_hpa_conflicts, scope,
                _cpu_flag(max_allowed_cpu_boost, "--max-allowed-cpu-boost"),
            ),
            workers,
            _memory_flag(worker_memory, "--worker-memory"),
            address,
            status_lease_flag(status_lease, "--status-lease"),
            registering,
        )  # fmt: skip
        # Passes: every list and every watch call the server ends on schedule (WATCH_SECONDS).
        telemetry = service_telemetry(
            "admission", metrics_port, timedelta(seconds=min(every, WATCH_SECONDS))
        )
        try:
            client = api_client_from(kubeconfig)
        except ClusterError as error:
            raise typer.BadParameter(str(error), param_hint="--kubeconfig") from error
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
        sock, stop_telemetry = _listen(address, port, telemetry, metrics_port)
        serve(service, client, sock, telemetry, stop_telemetry)
    finally:
        if made is not None:  # the key lives no longer than the process
            made.remove()


def _serving_pair(
    tls_cert: Path | None,
    tls_key: Path | None,
    ca_file: Path | None,
    self_signed_certs: bool,
    register_webhook: bool,
    target: tuple[str, int, str | None, str],
) -> tuple[Path, Path, Registering | None, SelfSignedPair | None]:
    """(certificate, key, what to register, the pair made here): the files given, or with
    --self-signed-certs a pair made now; exit 2 for files that cannot be served."""
    if self_signed_certs:
        if tls_cert or tls_key or ca_file:
            raise typer.BadParameter(
                "--self-signed-certs makes the certificate: no --tls-cert, --tls-key, --ca-file"
            )
        made, registering = self_signed(*target)
        return made.cert_file, made.key_file, registering, made
    if tls_cert is None or tls_key is None:
        raise typer.BadParameter("--tls-cert and --tls-key are needed (or --self-signed-certs)")
    try:
        CertificateReloader(_readable(tls_cert, "--tls-cert"), _readable(tls_key, "--tls-key"))
    except (ssl.SSLError, OSError) as error:
        raise typer.BadParameter(f"cannot use the certificate and key: {error}") from error
    service, port, url, timeout = target
    if not register_webhook:
        return tls_cert, tls_key, None, None
    return tls_cert, tls_key, registration_target(service, port, url, ca_file, timeout), None


def _listen(
    address: str, port: int, telemetry: ServiceTelemetry | None, metrics_port: int
) -> tuple[socket.socket, Callable[[], None]]:
    """The webhook's listening socket and the /metrics server (exit 2 if either cannot
    bind), with what stops the latter."""
    try:
        sock = listening_socket(address, port)
    except OSError as error:
        raise typer.BadParameter(f"cannot listen on {address}:{port}: {error}") from error
    try:
        metrics_server = serve_telemetry(telemetry, metrics_port)
    except typer.BadParameter:
        sock.close()
        raise
    return sock, metrics_server.stop if metrics_server is not None else lambda: None


def _positive_quantity(text: str, option: str) -> Quantity:
    """A quantity flag above 0 (exit 2 otherwise)."""
    try:
        amount = Quantity.parse(text)
    except QuantityError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None
    if amount.milli_value() <= 0:
        raise typer.BadParameter(f"must be above 0, got {text!r}", param_hint=option)
    return amount


def _memory_flag(text: str, option: str) -> int:
    """A positive memory quantity flag in bytes."""
    return _positive_quantity(text, option).milli_value() // 1000


def _cpu_flag(text: str | None, option: str) -> Quantity | None:
    """A positive CPU quantity flag, or None when not given."""
    return None if text is None else _positive_quantity(text, option)
