"""What the webhook benchmark runs: the load generator, both webhooks, and their cluster.

vegeta (a fixed-rate HTTP load generator) and upstream's admission controller are
built from the Go module proxy into `~/.cache/kube-tailor/bench` (never committed).
Upstream's module carries `exclude` directives, which `go install pkg@version`
refuses, so its downloaded source is copied out of the module cache and built as
the main module. Both webhooks read the same real kube-apiserver (the tests' control
plane) and serve the same certificate.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

CACHE = Path(os.environ.get("KUBE_TAILOR_CACHE", Path.home() / ".cache" / "kube-tailor")) / "bench"
VEGETA = "github.com/tsenart/vegeta/v12@v12.13.0"
UPSTREAM_MODULE, UPSTREAM_VERSION = "k8s.io/autoscaler/vertical-pod-autoscaler", "v1.8.1"
REPO = Path(__file__).resolve().parents[1]


class ToolUnavailable(RuntimeError):
    """A tool could not be built; the message says why."""


def _go(*args: str, cwd: Path | None = None, gobin: Path | None = None) -> str:
    env = {**os.environ, **({"GOBIN": str(gobin)} if gobin else {}), "GOFLAGS": "-buildvcs=false"}
    done = subprocess.run(
        ["go", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ToolUnavailable(f"go {' '.join(args)}: {done.stderr.strip()[-600:]}")
    return done.stdout


def vegeta() -> Path:
    """The vegeta binary, built once."""
    binary = CACHE / "bin" / "vegeta"
    if not binary.exists():
        _go("install", VEGETA, gobin=CACHE / "bin")
    return binary


def upstream_admission_controller() -> Path:
    """Upstream's admission controller at v1.8.1, built once from its module's source."""
    binary = CACHE / "bin" / f"upstream-admission-controller-{UPSTREAM_VERSION}"
    if binary.exists():
        return binary
    found = json.loads(_go("mod", "download", "-json", f"{UPSTREAM_MODULE}@{UPSTREAM_VERSION}"))
    source = CACHE / f"vpa-src-{UPSTREAM_VERSION}"
    if not source.exists():
        shutil.copytree(found["Dir"], source)
        for path in source.rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)
    _go("build", "-o", str(binary), "./pkg/admission-controller", cwd=source)
    return binary


def _tree(pid: int) -> list[psutil.Process]:
    try:
        parent = psutil.Process(pid)
        return [parent, *parent.children(recursive=True)]
    except psutil.Error:
        return []


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a process and its children so far."""
    total = 0.0
    for process in _tree(pid):
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and its children (our webhook's workers)."""
    total = 0
    for process in _tree(pid):
        with contextlib.suppress(psutil.Error):
            total += process.memory_info().rss
    return total


@dataclass
class Webhook:
    """A running webhook: its name, process and https URL."""

    name: str
    process: subprocess.Popen[bytes]
    url: str

    @property
    def rss(self) -> int:
        return tree_rss(self.process.pid)

    @property
    def cpu_seconds(self) -> float:
        return tree_cpu_seconds(self.process.pid)


def _wait_serving(url: str, ca_file: Path, process: subprocess.Popen[bytes], log: Path) -> None:
    context = ssl.create_default_context(cafile=str(ca_file))
    body = json.dumps({"kind": "AdmissionReview"}).encode()  # answered 400 by both: listening
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ToolUnavailable(f"{url} exited: {log.read_text()[-2000:]}")
        try:
            request = urllib.request.Request(url, data=body, method="POST")
            urllib.request.urlopen(request, context=context, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.5)
    raise ToolUnavailable(f"{url} did not answer within 180 s")


@contextlib.contextmanager
def running(
    name: str, argv: list[str], url: str, ca_file: Path, log: Path, code: Path = REPO
) -> Iterator[Webhook]:
    """The webhook `argv` started (ours from the checkout `code`), once it answers."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    with log.open("w") as sink:
        # run from `code` too: `python -m` puts the working directory first on sys.path
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=code)
    try:
        _wait_serving(url, ca_file, process, log)
        yield Webhook(name, process, url)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def ours(kubeconfig: Path, cert: Path, key: Path, port: int, metrics: int) -> list[str]:
    return [
        sys.executable, "-m", "tailor.cli.main", "admission",
        "--tls-cert", str(cert), "--tls-key", str(key), "--address", "127.0.0.1",
        "--port", str(port), "--metrics-port", str(metrics), "--kubeconfig", str(kubeconfig),
        "--status-lease", "default/tailor-admission-status",
    ]  # fmt: skip


def upstream(
    binary: Path, kubeconfig: Path, ca: Path, cert: Path, key: Path, port: int, metrics: int
) -> list[str]:
    return [
        str(binary), f"--kubeconfig={kubeconfig}", f"--client-ca-file={ca}",
        f"--tls-cert-file={cert}", f"--tls-private-key={key}", f"--port={port}",
        f"--address=127.0.0.1:{metrics}", "--register-webhook=false",
        "--status-lease-namespace=default",
    ]  # fmt: skip


def attack(
    targets: Path, ca_file: Path, rate: int, seconds: float, folder: Path, label: str
) -> dict[str, object]:
    """vegeta at `rate` requests/s for `seconds` over TLS, connecting as the API server
    calls a webhook: HTTP/1.1 (it offers only http/1.1 to webhooks, so that a Service's
    replicas share the load: k8s.io/apiserver pkg/util/webhook/client.go), keep-alive
    with up to 25 idle connections kept (client-go's transport) and a new connection
    whenever none is idle. vegeta would otherwise speak HTTP/2 to a server offering it
    (upstream's Go), one connection for everything, and HTTP/1.1 to ours. Its JSON report."""
    results = folder / f"{label}.bin"
    command = [
        str(vegeta()), "attack", "-format=json", f"-targets={targets}", f"-rate={rate}/s",
        f"-duration={seconds}s", f"-root-certs={ca_file}", "-timeout=10s", "-max-workers=2000",
        "-http2=false", "-keepalive=true", "-connections=25",
    ]  # fmt: skip
    with results.open("wb") as sink:
        subprocess.run(command, stdout=sink, check=True)
    report = subprocess.run(
        [str(vegeta()), "report", "-type=json", str(results)],
        capture_output=True,
        check=True,
    )
    results.unlink()
    return dict(json.loads(report.stdout))
