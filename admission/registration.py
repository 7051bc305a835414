"""The webhook registers itself (`--register-webhook`), as upstream's admission controller does.

Its MutatingWebhookConfiguration then never goes stale: the CA bundle is read from the
file the certificate's issuer keeps current (cert-manager's `ca.crt`), and a changed CA
is registered again at the next certificate check. Server-side apply makes each write
idempotent and leaves fields other managers own alone. The object itself is created by the
chart or the plain manifests: the webhook's role may only update it, by name, so a
compromised webhook pod cannot register a webhook of its own.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import kubernetes.client
from kubernetes.client.exceptions import ApiException

from tailor.api.crd import GROUP, VERSION, VPA_PLURAL
from tailor.kube import FIELD_MANAGER, UNREACHABLE, ClusterError, Json, api_message

LOG = logging.getLogger("tailor.admission")
REGISTRATION_NAME = "kube-tailor-admission"
WEBHOOK_NAME = "pods.admission.kube-tailor.io"
# the system's pods are never sized by us, nor the webhook's own (it cannot admit itself)
SYSTEM_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class Endpoint:
    """Where the API server sends reviews: a Service (in the cluster) or a URL."""

    service: tuple[str, str] | None = None
    port: int = 443
    url: str | None = None
    home: str = "kube-tailor"  # the webhook's own namespace, exempt from it

    def client_config(self, ca_pem: bytes) -> dict[str, Any]:
        config: dict[str, Any]
        if self.url is not None:
            config = {"url": self.url}
        else:
            assert self.service is not None
            namespace, name = self.service
            where = {"namespace": namespace, "name": name, "path": "/mutate", "port": self.port}
            config = {"service": where}
        config["caBundle"] = base64.b64encode(ca_pem).decode()
        return config


def registration(endpoint: Endpoint, ca_pem: bytes, timeout_seconds: int = 5) -> Json:
    """The MutatingWebhookConfiguration: pod CREATE and VPA CREATE / UPDATE, failing open
    (a webhook down or slow never blocks a pod), no side effects, the webhook's and the
    system's namespaces exempt. deploy/admission/webhook.yaml is this object for the
    shipped Service."""
    webhook = {
        "name": WEBHOOK_NAME,
        "clientConfig": endpoint.client_config(ca_pem),
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            },
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [GROUP],
                "apiVersions": [VERSION],
                "resources": [VPA_PLURAL],
                "scope": "Namespaced",
            },
        ],
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": [endpoint.home, SYSTEM_NAMESPACE],
                }
            ]
        },
        "failurePolicy": "Ignore",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": timeout_seconds,
        "reinvocationPolicy": "Never",
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": REGISTRATION_NAME,
            "labels": {"app.kubernetes.io/part-of": "kube-tailor"},
        },
        "webhooks": [webhook],
    }


def read_ca(path: Path) -> bytes:
    """The CA bundle's PEM; ValueError when it holds no certificate the API server could use."""
    pem = path.read_bytes()
    try:
        ssl.create_default_context(cadata=pem.decode("ascii"))
    except (ssl.SSLError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path} holds no PEM CA certificate: {error}") from None
    return pem


class Registrar:
    """Applies the registration, and again whenever the CA file's content changes."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        endpoint: Endpoint,
        ca_file: Path,
        timeout_seconds: int,
    ) -> None:
        self.admission = kubernetes.client.AdmissionregistrationV1Api(api_client)
        self.endpoint, self.ca_file, self.timeout = endpoint, ca_file, timeout_seconds
        self._registered: str | None = None  # digest of the CA last registered

    def check(self) -> bool:
        """Register if not yet done or the CA changed; True when it wrote. ClusterError when
        the API server refuses or is away (the caller retries at its next check)."""
        try:
            ca_pem = read_ca(self.ca_file)
        except (OSError, ValueError) as error:  # mid-rotation: keep what is registered
            LOG.error("cannot read the CA bundle: %s", error)
            return False
        digest = hashlib.sha256(ca_pem).hexdigest()
        if digest == self._registered:
            return False
        body = registration(self.endpoint, ca_pem, self.timeout)
        try:
            self.admission.patch_mutating_webhook_configuration(
                REGISTRATION_NAME,
                cast(Any, body),
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type="application/apply-patch+yaml",
                _preload_content=False,
            )
        except ApiException as error:
            hint = ""
            if error.status in (403, 404):  # it may only update its own, never create one
                hint = (
                    f" (MutatingWebhookConfiguration {REGISTRATION_NAME} must exist first: "
                    "the chart or deploy/admission/webhook.yaml creates it)"
                )
            raise ClusterError(f"cannot register the webhook: {api_message(error)}{hint}") from None
        except UNREACHABLE as error:
            raise ClusterError(f"cannot reach the API server to register: {error}") from None
        self._registered = digest
        LOG.info("registered MutatingWebhookConfiguration %s", REGISTRATION_NAME)
        return True
