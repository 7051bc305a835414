"""The webhook served in-process against a real API server, and registered with it."""

from __future__ import annotations

import base64
import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path

from kubernetes.client.exceptions import ApiException

from admission.cluster_cache import ClusterCache
from admission.events import events_listener, webhook_recorder
from admission.registration import Endpoint, registration
from tests.admission.https import Served, serve
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.rbac import apply_manifest, kubeconfig_for
from tests.cluster.waiting import wait_until

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
_probes = itertools.count()


@contextlib.contextmanager
def webhook(
    cluster: ControlPlane, folder: Path, events: bool = False
) -> Iterator[tuple[Served, ClusterCache]]:
    """The webhook on loopback reading `cluster`, its cache watching (re-listed every 5 min);
    with `events`, recording the service's Events."""
    client = cluster.api_client()
    cache = ClusterCache(client)
    cache.refresh()
    listener = events_listener(webhook_recorder(client)) if events else None
    served = serve(cache, folder, lambda: cache.loaded, also=listener)
    cache.start()
    try:
        yield served, cache
    finally:
        served.server.stop()
        cache.stop()
        client.close()


SHIPPED_RULES = registration(Endpoint(url="https://unused"), b"")["webhooks"][0]["rules"]


def configuration(name: str, url: str, ca_pem: bytes, namespace: str) -> Json:
    """A MutatingWebhookConfiguration with the shipped rules, for `namespace` only, failing
    open."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "pods.admission.kube-tailor.io",
                "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
                "rules": SHIPPED_RULES,  # pods CREATE, VPAs CREATE / UPDATE
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
            }
        ],
    }


def bare_pod(name: str) -> Json:
    container = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }


@contextlib.contextmanager
def registered(api: RawApi, served: Served, namespace: str) -> Iterator[None]:
    """Register the webhook for `namespace`, wait until the API server calls it, and
    delete the registration afterwards whatever happens."""
    name = f"tailor-{namespace}"
    api.create(WEBHOOKS, configuration(name, served.url + "/mutate", served.ca.cert_pem, namespace))
    try:

        def called() -> bool:
            probe = bare_pod(f"probe-{next(_probes)}")
            api.request(
                "POST", f"/api/v1/namespaces/{namespace}/pods", probe, query={"dryRun": "All"}
            )
            return any(request.dry_run for request, _ in served.verdicts)

        wait_until(called, timeout=20, interval=0.2, what="the API server calling the webhook")
        yield
    finally:
        with contextlib.suppress(ApiException):
            api.delete(f"{WEBHOOKS}/{name}")


def registering_account(api: RawApi, cluster: ControlPlane, folder: Path) -> Path:
    """The CRDs and the webhook's shipped RBAC, with the optional right to update its own
    registration, applied; the kubeconfig (in `folder`) of its service account."""
    install_crds(api)
    apply_manifest(api, "admission/rbac.yaml")
    apply_manifest(api, "admission/registration-rbac.yaml")
    return kubeconfig_for(api, cluster, "kube-tailor", "tailor-admission", folder)
