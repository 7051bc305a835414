"""A real Prometheus server with backfilled history, for tests marked `prometheus`.

`prometheus_server` is a session-scoped factory: `start(openmetrics_text)` backfills
the text with `promtool tsdb create-blocks-from openmetrics` into a fresh data dir,
starts `prometheus` on a free loopback port and returns once /-/ready answers.
The scrape config is empty unless `scrape_targets` (loopback `host:port`s, e.g. a
kubelet simulator's metrics port) are given: then the job `kubelet-sim` scrapes
them every `scrape_interval`, and `instance.wait_for_scrape()` waits for the first.
Every server it started is stopped at session end (SIGTERM, then SIGKILL, by PID).
Data dirs and logs are removed after a clean session and kept, with their paths
printed, when any test failed.

Debian's `prometheus` package provides both binaries; it is installed with apt
when they are missing (CI may run on a fresh machine).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt
import pytest

READY_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 10.0
EMPTY_SCRAPE_CONFIG = "global: {}\nscrape_configs: []\n"
SCRAPE_JOB = "kubelet-sim"
_DURATION = re.compile(r"([0-9]+(ms|s|m|h))+")


@dataclass(frozen=True)
class PrometheusInstance:
    """One running server; timings are kept so the suite can report its cost."""

    url: str
    data_dir: Path
    log_file: Path
    backfill_seconds: float
    startup_seconds: float
    scrape_targets: tuple[str, ...] = ()

    def query(self, promql: str) -> list[dict]:
        """An instant query's result vector (for waiting and debugging, not for the product)."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as response:
            return list(json.load(response)["data"]["result"])

    def wait_for_scrape(self, timeout: float = 30.0) -> None:
        """Block until every scrape target has been scraped successfully once."""
        wanted = f'up{{job="{SCRAPE_JOB}"}} == 1'
        deadline = time.monotonic() + timeout
        while len(self.query(wanted)) < len(self.scrape_targets):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"prometheus at {self.url} did not scrape {self.scrape_targets} "
                    f"within {timeout} s; log: {self.log_file}"
                )
            time.sleep(0.2)


@dataclass
class PrometheusFactory:
    """Starts servers for tests and owns their processes until the session ends."""

    base_dir: Path
    prometheus: str
    promtool: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    instances: list[PrometheusInstance] = field(default_factory=list)
    serving: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(
        self,
        openmetrics_text: str | None = None,
        scrape_targets: Sequence[str] = (),
        scrape_interval: str = "1s",
        basic_auth: tuple[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> PrometheusInstance:
        """Backfill `openmetrics_text` (must end with `# EOF`), if any, and serve it,
        scraping `scrape_targets` (loopback host:port) every `scrape_interval`; with
        `basic_auth` (user, password) every endpoint asks for it (a web config file).
        `host`: the address to listen on (a non-loopback one for an Endpoints object,
        which the API server refuses to point at loopback)."""
        config_text = scrape_config(scrape_targets, scrape_interval)
        workdir = self.base_dir / f"instance-{len(self.instances)}"
        data_dir = workdir / "data"
        data_dir.mkdir(parents=True)
        log_file = workdir / "prometheus.log"
        begun = time.monotonic()
        if openmetrics_text is not None:
            self._backfill(openmetrics_text, workdir, data_dir)
        backfilled = time.monotonic()
        config = workdir / "prometheus.yml"
        config.write_text(config_text)
        web = None
        if basic_auth is not None:
            user, password = basic_auth
            hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
            web = workdir / "web.yml"
            web.write_text(f"basic_auth_users:\n  {user}: '{hashed}'\n")
        url = self._serve(config, data_dir, log_file, web, basic_auth, host)
        instance = PrometheusInstance(
            url=url,
            data_dir=data_dir,
            log_file=log_file,
            backfill_seconds=backfilled - begun,
            startup_seconds=time.monotonic() - backfilled,
            scrape_targets=tuple(scrape_targets),
        )
        self.instances.append(instance)
        return instance

    def _backfill(self, openmetrics_text: str, workdir: Path, data_dir: Path) -> None:
        history = workdir / "history.om"
        history.write_text(openmetrics_text)
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

    def _serve(
        self,
        config: Path,
        data_dir: Path,
        log_file: Path,
        web: Path | None = None,
        basic_auth: tuple[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> str:
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
                        f"--web.listen-address={host}:{port}",
                        *([f"--web.config.file={web}"] if web is not None else []),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            self.processes.append(process)
            url = f"http://{host}:{port}"
            if _wait_ready(url, process, basic_auth):
                self.serving[url] = process
                return url
            _stop(process)
            if "address already in use" not in log_file.read_text(errors="replace"):
                break
        raise RuntimeError(
            f"prometheus did not become ready at {url}; log: {log_file}\n"
            + log_file.read_text(errors="replace")[-3000:]
        )

    def stop(self, instance: PrometheusInstance) -> None:
        """Stop one server early (e.g. so it stops scraping a target that goes away)."""
        _stop(self.serving[instance.url])

    def stop_all(self) -> None:
        for process in self.processes:
            _stop(process)


def backfill_end() -> int:
    """UNIX seconds two whole hours before now: the latest end a backfilled history may
    have (promtool's blocks must lie outside the head block) that retention still keeps."""
    return (int(time.time()) // 3600 - 2) * 3600


def scrape_config(targets: Sequence[str], interval: str) -> str:
    """prometheus.yml text: empty, or one static job scraping loopback `targets`.

    Only loopback addresses are accepted: these tests must never reach another host.
    The timeout equals the interval (Prometheus refuses a longer one).
    """
    if not targets:
        return EMPTY_SCRAPE_CONFIG
    if not _DURATION.fullmatch(interval):
        raise ValueError(f"scrape_interval {interval!r} is not a Prometheus duration like '1s'")
    for target in targets:
        host, sep, port = target.rpartition(":")
        host = host.strip("[]")
        loopback = host == "localhost" or (_is_ip(host) and ipaddress.ip_address(host).is_loopback)
        if not sep or not port.isdigit() or not loopback:
            raise ValueError(f"scrape target {target!r} is not a loopback host:port")
    config = {
        "global": {"scrape_interval": interval, "scrape_timeout": interval},
        "scrape_configs": [
            {
                "job_name": SCRAPE_JOB,
                "scrape_interval": interval,
                "scrape_timeout": interval,
                "metrics_path": "/metrics",
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }
    return json.dumps(config, indent=2) + "\n"  # JSON is YAML


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(
    url: str, process: subprocess.Popen[bytes], basic_auth: tuple[str, str] | None = None
) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    request = urllib.request.Request(f"{url}/-/ready")
    if basic_auth is not None:
        token = base64.b64encode(":".join(basic_auth).encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
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
    """Factory of real Prometheus servers; each `start(...)` serves its own history and
    scrapes its own targets."""
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
