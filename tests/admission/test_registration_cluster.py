"""`tailor admission --register-webhook` on the real API server: on the shipped RBAC it may
not create a registration, only update the one the chart or webhook.yaml created (retrying
until it exists), the API server then calls it for new pods, and a
rotated CA is registered again. Serving, it renews its status Lease, which the updater reads."""

from __future__ import annotations

import base64
import contextlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kubernetes.client.exceptions import ApiException

from admission.registration import REGISTRATION_NAME, Endpoint, registration
from tailor.kube import api_client_from
from tailor.lease import ApiLease
from tailor.schedule_file import aware_time
from tailor.status_lease import STATUS_LEASE, StatusCheck
from tests.admission.cluster import WEBHOOKS, registering_account
from tests.admission.https import call, serving_pair
from tests.admission.test_webhook_cluster import container, create_vpa, deployment, pod_of
from tests.cluster.fixtures import FullNamespace
from tests.cluster.processes import free_port, tailor_process
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.rbac import apply_manifest, kubeconfig_for
from tests.cluster.waiting import wait_until


def _renewed(api: RawApi, path: str) -> datetime | None:
    """When the Lease at `path` was last renewed (None: there is none yet)."""
    try:
        spec = api.get(path)["spec"]
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return aware_time(spec["renewTime"]) if spec.get("renewTime") else None


def test_the_webhook_updates_its_own_registration_and_is_then_called_for_new_pods(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    account = registering_account(api, full_namespace.cluster, tmp_path / "account")
    ca, pair = serving_pair(tmp_path / "tls")
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(ca.cert_pem)
    port = free_port()
    url = f"https://127.0.0.1:{port}/mutate"
    command = [
        "admission", "--tls-cert", str(pair.cert_file), "--tls-key", str(pair.key_file),
        "--port", str(port), "--address", "127.0.0.1", "--kubeconfig", str(account),
        "--metrics-port", "0", "--cert-check", "1s",
        "--register-webhook", "--ca-file", str(ca_file), "--webhook-url", url,
        "--webhook-timeout", "3s",
    ]  # fmt: skip
    log = tmp_path / "admission.log"

    def registered() -> Json | None:
        try:
            found: Json = api.get(f"{WEBHOOKS}/{REGISTRATION_NAME}")
            return found
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    try:
        with tailor_process(command, log) as service:
            # its role may update its own registration by name, never create one
            wait_until(lambda: "must exist first" in log.read_text(), timeout=60, what="403")
            assert registered() is None
            placeholder = dict(registration(Endpoint(url=url), b""))
            del placeholder["webhooks"][0]["clientConfig"]["caBundle"]
            api.create(WEBHOOKS, placeholder)  # what the chart or webhook.yaml creates
            stored = wait_until(
                lambda: (
                    (found := registered())
                    and "caBundle" in found["webhooks"][0]["clientConfig"]
                    and found
                ),
                timeout=30,
                what="the registration, once it exists",
            )
            assert isinstance(stored, dict)
            [hook] = stored["webhooks"]
            assert hook["clientConfig"]["url"] == url
            assert base64.b64decode(hook["clientConfig"]["caBundle"]) == ca.cert_pem
            assert hook["timeoutSeconds"] == 3

            def serving() -> bool:  # its workers list the cluster first
                try:
                    return call(url.replace("/mutate", "/healthz"), ca)[0] == 200
                except OSError:
                    return False

            wait_until(serving, timeout=90, what="the workers serving")
            # the API server now calls it: a new pod gets its VPA's target
            create_vpa(api, namespace, "web", "Auto", {"app": {"cpu": "750m"}})
            app = container("app", {"requests": {"cpu": "100m"}})
            api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", app))
            pod = pod_of(api, namespace, "web")
            assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "750m"

            # serving, it renews its status Lease on the shipped role, every 10 s; the
            # updater, on its own shipped role, reads it fresh and may evict
            lease_path = (
                f"/apis/coordination.k8s.io/v1/namespaces/kube-tailor/leases/{STATUS_LEASE}"
            )
            first = wait_until(lambda: _renewed(api, lease_path), timeout=30, what="status Lease")
            wait_until(
                lambda: (_renewed(api, lease_path) or first) - first >= timedelta(seconds=5),
                timeout=30,
                what="the status Lease renewed",
            )
            apply_manifest(api, "updater/rbac.yaml")
            updater = kubeconfig_for(
                api, full_namespace.cluster, "kube-tailor", "tailor-updater", tmp_path / "upd"
            )
            lease = ApiLease(api_client_from(updater), "kube-tailor", STATUS_LEASE)
            assert StatusCheck(lease)(datetime.now(UTC)) is None

            rotated, _ = serving_pair(tmp_path / "rotated")
            ca_file.write_bytes(rotated.cert_pem)
            wait_until(
                lambda: (
                    base64.b64decode(registered()["webhooks"][0]["clientConfig"]["caBundle"])  # type: ignore[index]
                    == rotated.cert_pem
                ),
                timeout=30,
                what="the rotated CA registered",
            )
            assert service.process.poll() is None
        assert service.code == 0, service.output()
    finally:
        with contextlib.suppress(ApiException):
            api.delete(f"{WEBHOOKS}/{REGISTRATION_NAME}")
