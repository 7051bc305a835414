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
import json
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import kubernetes.client
from kubernetes.client.exceptions import ApiException

from admission.self_signed import holds, merged_bundle
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
    """Applies the registration, and again whenever the CA file's content changes.

    `shared`: the caBundle is shared with other replicas, each with its own self-signed CA
    (admission.self_signed): every check reads the registration and, when our CA is not in
    it, writes it merged with theirs, on the resourceVersion read (a replica writing at
    the same moment is a 409, merged again at the next check, never lost).
    """

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        endpoint: Endpoint,
        ca_file: Path,
        timeout_seconds: int,
        shared: bool = False,
    ) -> None:
        self.admission = kubernetes.client.AdmissionregistrationV1Api(api_client)
        self.endpoint, self.ca_file, self.timeout = endpoint, ca_file, timeout_seconds
        self.shared = shared
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
        if self.shared:
            return self._share(ca_pem, digest)
        if digest == self._registered:
            return False
        self._apply(registration(self.endpoint, ca_pem, self.timeout))
        self._registered = digest
        return True

    def _share(self, ca_pem: bytes, digest: str) -> bool:
        current = _bundle(self.read())
        if digest == self._registered and holds(current[0], ca_pem):
            return False
        body = registration(self.endpoint, merged_bundle(current[0], ca_pem), self.timeout)
        body["metadata"]["resourceVersion"] = current[1]  # a 409 if another replica wrote
        self._apply(body)
        self._registered = digest
        return True

    def read(self) -> Json:
        """The registration as stored (ClusterError when it cannot be read)."""
        stored = self._call(
            lambda: self.admission.read_mutating_webhook_configuration(
                REGISTRATION_NAME, _preload_content=False
            ),
            "read",
        )
        found: Json = json.loads(stored.data)
        return found

    def _apply(self, body: Json) -> None:
        self._call(
            lambda: self.admission.patch_mutating_webhook_configuration(
                REGISTRATION_NAME,
                cast(Any, body),
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type="application/apply-patch+yaml",
                _preload_content=False,
            ),
            "register",
        )
        LOG.info("registered MutatingWebhookConfiguration %s", REGISTRATION_NAME)

    @staticmethod
    def _call(call: Callable[[], Any], what: str) -> Any:
        try:
            return call()
        except ApiException as error:
            hint = ""
            if error.status in (403, 404):  # it may only update its own, never create one
                hint = (
                    f" (MutatingWebhookConfiguration {REGISTRATION_NAME} must exist first: "
                    "the chart or deploy/admission/webhook.yaml creates it)"
                )
            message = api_message(error)
            raise ClusterError(f"cannot {what} the webhook: {message}{hint}") from None
        except UNREACHABLE as error:
            raise ClusterError(f"cannot reach the API server to {what}: {error}") from None


def _bundle(stored: Json) -> tuple[bytes, str]:
    """(caBundle PEM, resourceVersion) of our webhook in the stored registration."""
    hooks = [h for h in stored.get("webhooks") or [] if h.get("name") == WEBHOOK_NAME]
    encoded = hooks[0].get("clientConfig", {}).get("caBundle", "") if hooks else ""
    return base64.b64decode(encoded), str(stored["metadata"]["resourceVersion"])
