"""A real Prometheus server with backfilled history, for tests marked `prometheus`.

`prometheus_server` is a session-scoped factory: `start(openmetrics_text)` backfills
the text with `promtool tsdb create-blocks-from openmetrics` into a fresh data dir,
starts `prometheus` on a free loopback port with an empty scrape config and
returns once /-/ready answers. Every server it started is stopped at session end
(SIGTERM, then SIGKILL, by PID). Data dirs and logs are removed after a clean
session and kept, with their paths printed, when any test failed.

Debian's `prometheus` package provides both binaries; it is installed with apt
when they are missing (CI may run on a fresh machine).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

READY_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 10.0
EMPTY_SCRAPE_CONFIG = "global: {}\nscrape_configs: []\n"


@dataclass(frozen=True)
class PrometheusInstance:
    """One running server; timings are kept so the suite can report its cost."""

    url: str
    data_dir: Path
    log_file: Path
    backfill_seconds: float
    startup_seconds: float


@dataclass
class PrometheusFactory:
    """Starts servers for tests and owns their processes until the session ends."""

    base_dir: Path
    prometheus: str
    promtool: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    instances: list[PrometheusInstance] = field(default_factory=list)

    def start(self, openmetrics_text: str) -> PrometheusInstance:
        """Backfill `openmetrics_text` (must end with `# EOF`) and serve it."""
        workdir = self.base_dir / f"instance-{len(self.instances)}"
        data_dir = workdir / "data"
        data_dir.mkdir(parents=True)
        history = workdir / "history.om"
        history.write_text(openmetrics_text)
        log_file = workdir / "prometheus.log"
        begun = time.monotonic()
        backfill = subprocess.run(
            [
                self.promtool,
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                str(history),
                str(data_dir),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        (workdir / "promtool.log").write_text(backfill.stdout + backfill.stderr)
        if backfill.returncode != 0:
            raise RuntimeError(
                f"promtool backfill failed ({backfill.returncode}); "
                f"log in {workdir}/promtool.log:\n" + backfill.stderr[-2000:]
            )
        backfilled = time.monotonic()
        config = workdir / "prometheus.yml"
        config.write_text(EMPTY_SCRAPE_CONFIG)
        url = self._serve(config, data_dir, log_file)
        instance = PrometheusInstance(
            url=url,
            data_dir=data_dir,
            log_file=log_file,
            backfill_seconds=backfilled - begun,
            startup_seconds=time.monotonic() - backfilled,
        )
        self.instances.append(instance)
        return instance

    def _serve(self, config: Path, data_dir: Path, log_file: Path) -> str:
        # A port picked free can be taken before prometheus binds it: retry a few times.
        for _ in range(3):
            port = _free_port()
            with log_file.open("ab") as log:
                process = subprocess.Popen(
                    [
                        self.prometheus,
                        f"--config.file={config}",
                        f"--storage.tsdb.path={data_dir}",
                        "--storage.tsdb.retention.time=3650d",
                        f"--web.listen-address=127.0.0.1:{port}",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            self.processes.append(process)
            url = f"http://127.0.0.1:{port}"
            if _wait_ready(url, process):
                return url
            _stop(process)
            if "address already in use" not in log_file.read_text(errors="replace"):
                break
        raise RuntimeError(
            f"prometheus did not become ready at {url}; log: {log_file}\n"
            + log_file.read_text(errors="replace")[-3000:]
        )

    def stop_all(self) -> None:
        for process in self.processes:
            _stop(process)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(url: str, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.05)
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop exactly this process: SIGTERM, then SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_SECONDS)


def _ensure_binaries() -> tuple[str, str]:
    """Paths of prometheus and promtool, installing Debian's package if needed."""
    found = shutil.which("prometheus"), shutil.which("promtool")
    if all(found):
        return found[0] or "", found[1] or ""
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "prometheus"]):
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        if result.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not (prometheus and promtool):
        pytest.fail("the Debian package `prometheus` did not provide prometheus and promtool")
    return prometheus, promtool


@pytest.fixture(scope="session")
def prometheus_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PrometheusFactory]:
    """Factory of real Prometheus servers; each `start(text)` serves its own history."""
    prometheus, promtool = _ensure_binaries()
    base_dir = tmp_path_factory.mktemp("prometheus")
    factory = PrometheusFactory(base_dir, prometheus, promtool)
    try:
        yield factory
    finally:
        factory.stop_all()
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        timings = ", ".join(
            f"backfill {i.backfill_seconds:.2f} s + ready {i.startup_seconds:.2f} s"
            for i in factory.instances
        )
        if request.session.testsfailed:
            message = f"tests failed: Prometheus data dirs and logs kept in {base_dir}"
        else:
            shutil.rmtree(base_dir, ignore_errors=True)
            message = f"Prometheus servers started: {len(factory.instances)} ({timings})"
        if reporter is not None and factory.instances:
            reporter.write_line(message)
