"""`tailor admission --self-signed-certs` on the real API server, on the shipped RBAC: the CA
it made is what its registration's caBundle holds, and the API server, trusting it, calls
the webhook for a new pod, which gets its VPA's target. The key goes when it stops. Replicas
registering at once keep each other's CAs in the one caBundle."""

from __future__ import annotations

import base64
import contextlib
import ssl
import tempfile
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from admission.registration import REGISTRATION_NAME, Endpoint, Registrar, registration
from admission.self_signed import holds, issue
from tailor.kube import ClusterError
from tests.admission.cluster import WEBHOOKS, registering_account
from tests.admission.test_webhook_cluster import container, create_vpa, deployment, pod_of
from tests.cluster.controlplane import ControlPlane
from tests.cluster.fixtures import FullNamespace
from tests.cluster.processes import free_port, tailor_process
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until


def _bundle(api: RawApi) -> bytes:
    stored = api.get(f"{WEBHOOKS}/{REGISTRATION_NAME}")
    return base64.b64decode(stored["webhooks"][0]["clientConfig"].get("caBundle", ""))


def _answers(url: str, context: ssl.SSLContext) -> bool:
    try:
        with urllib.request.urlopen(url, context=context, timeout=5) as response:
            return bool(response.status == 200)
    except OSError:  # not listening yet, or no worker ready
        return False


def test_the_webhook_registers_the_ca_it_made_and_the_api_server_calls_it(
    full_namespace: FullNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    account = registering_account(api, full_namespace.cluster, tmp_path / "account")
    scratch = tmp_path / "tmp"  # where the service writes its pair ($TMPDIR)
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    port = free_port()
    url = f"https://127.0.0.1:{port}/mutate"
    placeholder = dict(registration(Endpoint(url=url), b""))
    del placeholder["webhooks"][0]["clientConfig"]["caBundle"]
    api.create(WEBHOOKS, placeholder)  # what the chart or webhook.yaml creates, CA-less
    command = [
        "admission", "--self-signed-certs", "--webhook-url", url, "--port", str(port),
        "--address", "127.0.0.1", "--kubeconfig", str(account), "--metrics-port", "0",
    ]  # fmt: skip
    try:
        with tailor_process(command, tmp_path / "admission.log") as service:
            wait_until(lambda: _bundle(api), timeout=60, what="a caBundle registered")
            [made] = scratch.glob("tailor-admission-tls-*")
            assert _bundle(api) == (made / "ca.crt").read_bytes()
            trusting = ssl.create_default_context(cafile=made / "ca.crt")
            healthz = url.replace("/mutate", "/healthz")
            wait_until(lambda: _answers(healthz, trusting), timeout=90, what="workers serving")

            create_vpa(api, namespace, "web", "Auto", {"app": {"cpu": "750m"}})
            app = container("app", {"requests": {"cpu": "100m"}})
            api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", app))
            pod = pod_of(api, namespace, "web")
            assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "750m"
            assert service.process.poll() is None
        assert service.code == 0, service.output()
        assert not made.exists()  # the key lives no longer than the process
    finally:
        with contextlib.suppress(ApiException):
            api.delete(f"{WEBHOOKS}/{REGISTRATION_NAME}")


class StaleReader(Registrar):
    """A replica whose read of the registration came before another replica's write."""

    stale: Mapping[str, Any] | None = None

    def read(self) -> Mapping[str, Any]:
        assert self.stale is not None
        return self.stale


def test_replicas_registering_at_once_keep_each_others_cas(
    kube_cluster: ControlPlane, kube_api: RawApi, tmp_path: Path
) -> None:
    endpoint = Endpoint(url="https://127.0.0.1:1/mutate")
    placeholder = dict(registration(endpoint, b""))
    del placeholder["webhooks"][0]["clientConfig"]["caBundle"]
    kube_api.create(WEBHOOKS, placeholder)
    try:
        with kube_cluster.api_client() as client:
            replicas = []
            for name in ("a", "b", "c"):
                ca_file = tmp_path / f"{name}.crt"
                ca_file.write_bytes(issue(("127.0.0.1",))[0])
                replicas.append(Registrar(client, endpoint, ca_file, 5, shared=True))
            # b read the registration before a wrote: its write is refused (409), not
            # applied over a's CA, and goes through at its next check
            read_before = replicas[1].read()
            assert replicas[0].check()
            late = StaleReader(client, endpoint, replicas[1].ca_file, 5, shared=True)
            late.stale = read_before
            with pytest.raises(ClusterError, match="the object has been modified"):
                late.check()
            assert holds(_bundle(kube_api), replicas[0].ca_file.read_bytes())
            assert replicas[1].check() and replicas[2].check()
            assert not replicas[0].check()  # its CA is still there: nothing to write
            bundle = _bundle(kube_api)
            assert all(holds(bundle, r.ca_file.read_bytes()) for r in replicas)
            assert bundle.startswith(replicas[2].ca_file.read_bytes())  # the last writer's
    finally:
        with contextlib.suppress(ApiException):
            kube_api.delete(f"{WEBHOOKS}/{REGISTRATION_NAME}")
