"""A webhook server on loopback with a certificate from a test CA, and a client for it."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from admission.admit import ClusterView
from admission.review import AdmissionRequest, Verdict
from admission.server import WebhookServer, make_app, tls_context
from tests.cluster.certs import CertificateAuthority, KeyPair


@dataclass
class Served:
    """A running webhook: its URL, the CA that trusts it, and every verdict it gave."""

    server: WebhookServer
    ca: CertificateAuthority
    pair: KeyPair
    verdicts: list[tuple[AdmissionRequest, Verdict]]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.port}"

    def post(self, path: str, body: bytes) -> tuple[int, str]:
        return call(self.url + path, self.ca, body)


def serving_pair(folder: Path) -> tuple[CertificateAuthority, KeyPair]:
    ca = CertificateAuthority(folder)
    pair = ca.issue("webhook", common_name="tailor-admission", hosts=("127.0.0.1",), server=True)
    return ca, pair


def serve(view: ClusterView, folder: Path, ready: Callable[[], bool] = lambda: True) -> Served:
    ca, pair = serving_pair(folder)
    verdicts: list[tuple[AdmissionRequest, Verdict]] = []
    app = make_app(view, ready, lambda request, verdict: verdicts.append((request, verdict)))
    server = WebhookServer(app, tls_context(pair.cert_file, pair.key_file), "127.0.0.1", 0)
    return Served(server.start(), ca, pair, verdicts)


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
