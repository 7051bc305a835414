"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and, on
request, kube-controller-manager and kube-scheduler.

Used by the pytest fixtures (one per session and option set) and by
`python -m tests.cluster.up` (make cluster-up). Everything lives in one work
folder: certificates (pki/), etcd data, one log per process (logs/) and the
admin kubeconfig.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import ssl
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes.client
import yaml

from tests.cluster.certs import CertificateAuthority, KeyPair, write_service_account_keys
from tests.cluster.processes import ManagedProcess, ProcessStartError, free_port

LOOPBACK = "127.0.0.1"
_READY_TIMEOUT = 90.0
_START_ATTEMPTS = 3
# Controllers that would mark kubelet-less nodes NotReady and empty them, or
# need a cloud / pod CIDRs (see real-cluster-in-tests.md).
_CONTROLLERS = "*,-node-lifecycle-controller,-taint-eviction-controller,-node-ipam-controller"


@dataclass(frozen=True)
class ClusterOptions:
    """What a control plane runs; each distinct value is its own cluster in a test session.

    controllers: also run kube-controller-manager and kube-scheduler.
    resize_validator: keep 1.36's PodResizeValidator admission plugin, which
        answers 403 (cause NodeCapacity) to resizes above the node's allocatable.
        False gives the API behaviour of Kubernetes <= 1.35, where such a resize is
        accepted and the kubelet marks it Infeasible.
    """

    controllers: bool = False
    resize_validator: bool = True


@dataclass
class ControlPlane:
    """Processes and files of one running control plane (see module docstring)."""

    workdir: Path
    bin_dir: Path
    etcd_path: str
    options: ClusterOptions = field(default_factory=ClusterOptions)
    tie_to_parent: bool = True
    processes: list[ManagedProcess] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    startup_seconds: dict[str, float] = field(default_factory=dict)

    # -- paths -----------------------------------------------------------
    @property
    def pki_dir(self) -> Path:
        return self.workdir / "pki"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.pki_dir / "ca.crt"

    @property
    def admin(self) -> KeyPair:
        return KeyPair(self.pki_dir / "admin.crt", self.pki_dir / "admin.key")

    @property
    def server(self) -> str:
        return f"https://{LOOPBACK}:{self.ports['kube-apiserver']}"

    # -- client ----------------------------------------------------------
    def api_client(self) -> kubernetes.client.ApiClient:
        """A new client authenticated as cluster admin (no global configuration touched)."""
        config = kubernetes.client.Configuration()
        config.host = self.server
        config.ssl_ca_cert = str(self.ca_file)
        config.cert_file = str(self.admin.cert_file)
        config.key_file = str(self.admin.key_file)
        config.verify_ssl = True
        return kubernetes.client.ApiClient(config)

    def _admin_ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(str(self.admin.cert_file), str(self.admin.key_file))
        return context

    # -- lifecycle -------------------------------------------------------
    def start(self) -> ControlPlane:
        """Start every process and wait until each answers; stop all on failure."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._write_certificates()
            self._start_with_retries("etcd", self._etcd, self._etcd_ready)
            self._write_kubeconfig()
            self._start_with_retries("kube-apiserver", self._apiserver, self._apiserver_ready)
            if self.options.controllers:
                self._start_with_retries(
                    "kube-controller-manager", self._controller_manager, self._healthz_ready
                )
                self._start_with_retries("kube-scheduler", self._scheduler, self._healthz_ready)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the processes this object started, newest first, by PID."""
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
        shutil.rmtree(self.workdir / "etcd-data", ignore_errors=True)

    def describe(self) -> dict[str, Any]:
        """Plain data about the running cluster (for cluster-up's state file)."""
        return {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "ca_file": str(self.ca_file),
            "log_dir": str(self.log_dir),
            "options": {
                "controllers": self.options.controllers,
                "resize_validator": self.options.resize_validator,
            },
            "processes": [
                {"name": p.name, "pid": p.pid, "exe": p.argv[0], "log": str(p.log_file)}
                for p in self.processes
            ],
            "ports": dict(self.ports),
        }

    # -- internals -------------------------------------------------------
    def _write_certificates(self) -> None:
        ca = CertificateAuthority(self.pki_dir)
        ca.issue(
            "apiserver",
            common_name="kube-apiserver",
            hosts=(LOOPBACK, "localhost", "10.0.0.1", "kubernetes", "kubernetes.default"),
            server=True,
        )
        ca.issue(
            "admin", common_name="kube-tailor-admin", organization="system:masters", client=True
        )
        write_service_account_keys(self.pki_dir)

    def _write_kubeconfig(self) -> None:
        # The API server port is chosen before it starts, so the file is valid early.
        self.ports.setdefault("kube-apiserver", free_port())
        name = "kube-tailor-test"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {
                        "server": self.server,
                        "certificate-authority": str(self.ca_file),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.admin.cert_file),
                        "client-key": str(self.admin.key_file),
                    },
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
            "current-context": name,
        }
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))

    def _start_with_retries(
        self, name: str, argv_for_port: Callable[[int], list[str]], ready: Callable[[int], bool]
    ) -> None:
        """Start `name` on a fresh free port; retry when the port was taken meanwhile."""
        for attempt in range(1, _START_ATTEMPTS + 1):
            port = self.ports.get(name) if attempt == 1 else None
            port = port or free_port()
            self.ports[name] = port
            if name == "kube-apiserver":
                self._write_kubeconfig()
            process = ManagedProcess(name, argv_for_port(port), self.log_dir / f"{name}.log")
            process.start(tie_to_parent=self.tie_to_parent)
            self.processes.append(process)
            try:
                self.startup_seconds[name] = process.wait_ready(
                    functools.partial(ready, port), _READY_TIMEOUT
                )
                return
            except ProcessStartError:
                process.stop()
                self.processes.remove(process)
                in_use = "address already in use" in process.log_file.read_text(errors="replace")
                if attempt == _START_ATTEMPTS or not in_use:
                    raise

    def _etcd(self, port: int) -> list[str]:
        peer = self.ports.setdefault("etcd-peer", free_port())
        client_url = f"http://{LOOPBACK}:{port}"
        peer_url = f"http://{LOOPBACK}:{peer}"
        return [
            self.etcd_path,
            "--name=default",
            f"--data-dir={self.workdir / 'etcd-data'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync",
            "--logger=zap",
            "--log-outputs=stderr",
        ]

    def _etcd_ready(self, port: int) -> bool:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/health", timeout=2) as answer:
            return b'"health":"true"' in answer.read()

    def _apiserver(self, port: int) -> list[str]:
        pki = self.pki_dir
        disabled = ["ServiceAccount"]
        if not self.options.resize_validator:
            disabled.append("PodResizeValidator")
        return [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers=http://{LOOPBACK}:{self.ports['etcd']}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            f"--secure-port={port}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={self.ca_file}",
            f"--service-account-issuer=https://{LOOPBACK}:{port}/",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            f"--disable-admission-plugins={','.join(disabled)}",
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
        ]

    def _apiserver_ready(self, port: int) -> bool:
        url = f"https://{LOOPBACK}:{port}/readyz"
        with urllib.request.urlopen(url, timeout=3, context=self._admin_ssl_context()) as answer:
            return answer.status == 200

    def _component_flags(self, name: str, port: int) -> list[str]:
        cert_dir = self.workdir / name
        cert_dir.mkdir(exist_ok=True)
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={port}",
            f"--cert-dir={cert_dir}",
            "--leader-elect=false",
            "--profiling=false",
        ]

    def _controller_manager(self, port: int) -> list[str]:
        pki = self.pki_dir
        return [
            str(self.bin_dir / "kube-controller-manager"),
            *self._component_flags("kube-controller-manager", port),
            f"--controllers={_CONTROLLERS}",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={self.ca_file}",
            f"--cluster-signing-cert-file={self.ca_file}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            "--use-service-account-credentials=false",
        ]

    def _scheduler(self, port: int) -> list[str]:
        return [
            str(self.bin_dir / "kube-scheduler"),
            *self._component_flags("kube-scheduler", port),
        ]

    def _healthz_ready(self, port: int) -> bool:
        # Their serving certificates are self-signed, made at start-up; this is loopback.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://{LOOPBACK}:{port}/healthz"
        with urllib.request.urlopen(url, timeout=3, context=context) as answer:
            return answer.status == 200


def wait_for_default_namespace(plane: ControlPlane, timeout: float = 30.0) -> None:
    """The API server creates 'default' shortly after /readyz; tests assume it exists."""
    deadline = time.monotonic() + timeout
    with plane.api_client() as client:
        core = kubernetes.client.CoreV1Api(client)
        while time.monotonic() < deadline:
            with contextlib.suppress(kubernetes.client.ApiException):
                core.read_namespace("default")
                return
            time.sleep(0.1)
    raise ProcessStartError(f"namespace 'default' did not appear within {timeout:.0f}s")
