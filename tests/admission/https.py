"""A webhook server on loopback with a certificate from a test CA, and a client for it.

`SecretMount` lays the certificate out as the kubelet mounts a Secret, to rotate it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from admission.admit import ClusterView
from admission.certificates import CertificateReloader
from admission.edge import WebhookServer
from admission.metrics import MetricsSink
from admission.review import AdmissionRequest, Verdict
from admission.server import ReviewLimits, make_app
from tests.cluster.certs import CertificateAuthority, KeyPair


@dataclass
class Served:
    """A running webhook: its URL, the CA that trusts it, and every verdict it gave."""

    server: WebhookServer
    ca: CertificateAuthority
    pair: KeyPair
    verdicts: list[tuple[AdmissionRequest, Verdict]]
    certificates: CertificateReloader

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.port}"

    def post(self, path: str, body: bytes) -> tuple[int, str]:
        return call(self.url + path, self.ca, body)


def serving_pair(folder: Path) -> tuple[CertificateAuthority, KeyPair]:
    ca = CertificateAuthority(folder)
    pair = ca.issue("webhook", common_name="tailor-admission", hosts=("127.0.0.1",), server=True)
    return ca, pair


def serve(
    view: ClusterView,
    folder: Path,
    ready: Callable[[], bool] = lambda: True,
    issued: tuple[CertificateAuthority, KeyPair] | None = None,
    limits: ReviewLimits | None = None,
    metrics: MetricsSink | None = None,
    also: Callable[[AdmissionRequest, Verdict], None] | None = None,
) -> Served:
    """The webhook on loopback with `issued` (default: a new CA's pair in `folder`); `also`
    sees every verdict too (the service's Events listener)."""
    ca, pair = issued or serving_pair(folder)
    verdicts: list[tuple[AdmissionRequest, Verdict]] = []

    def listen(request: AdmissionRequest, verdict: Verdict) -> None:
        verdicts.append((request, verdict))
        if also is not None:
            also(request, verdict)

    app = make_app(view, ready, listen, metrics=metrics, limits=limits or ReviewLimits())
    certificates = CertificateReloader(pair.cert_file, pair.key_file)
    server = WebhookServer(app, certificates, "127.0.0.1", 0)
    return Served(server.start(), ca, pair, verdicts, certificates)


def call(url: str, ca: CertificateAuthority, body: bytes | None = None) -> tuple[int, str]:
    """(status, body text) of a GET (no body) or POST over TLS checked against `ca`."""
    context = ssl.create_default_context(cafile=str(ca.pair.cert_file))
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def answer(text: str) -> dict[str, Any]:
    return dict(json.loads(text)["response"])


class SecretMount:
    """A folder laid out as the kubelet mounts a Secret with tls.crt and tls.key.

    tls.crt -> ..data/tls.crt, and ..data -> a version folder; an update writes a new
    version folder and swaps ..data in one rename, so the paths stay and content changes.
    """

    def __init__(self, folder: Path, pair: KeyPair) -> None:
        self.folder, self._versions = folder, 0
        folder.mkdir()
        self.publish_pair(pair)
        for name in ("tls.crt", "tls.key"):
            (folder / name).symlink_to(f"..data/{name}")
        self.pair = KeyPair(folder / "tls.crt", folder / "tls.key")

    def publish(self, cert: bytes, key: bytes | None) -> None:
        """A new version folder, then `..data` swapped to it; None: the key is missing."""
        self._versions += 1
        version = self.folder / f"..version_{self._versions}"
        version.mkdir()
        (version / "tls.crt").write_bytes(cert)
        if key is not None:
            (version / "tls.key").write_bytes(key)
        data = self.folder / "..data"
        previous = data.resolve() if data.exists() else None
        (self.folder / "..data_tmp").symlink_to(version.name)
        os.replace(self.folder / "..data_tmp", data)
        if previous is not None:
            shutil.rmtree(previous)

    def publish_pair(self, pair: KeyPair) -> None:
        self.publish(pair.cert_file.read_bytes(), pair.key_file.read_bytes())


def presented(port: int, ca: CertificateAuthority) -> bytes:
    """The certificate (DER) a new TLS connection to `port` is given, verified against `ca`."""
    context = ssl.create_default_context(cafile=str(ca.pair.cert_file))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        certificate = tls.getpeercert(binary_form=True)
    assert certificate is not None
    return certificate


def der(pair: KeyPair) -> bytes:
    """The certificate of `pair` as DER, to compare with `presented`."""
    return ssl.PEM_cert_to_DER_cert(pair.cert_file.read_text())
