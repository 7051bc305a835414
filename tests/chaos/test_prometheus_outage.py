"""`tailor recommender` while its real Prometheus is frozen (SIGSTOP), then stopped.

Each pass that Prometheus ends says so in one error line naming Prometheus and what was
kept, within the call timeout (10 s at a 4 s interval) rather than the 60 s and four tries
it took before; /health-check names the outage and /metrics counts it; every VPA keeps its
recommendation; the service resumes alone when Prometheus answers again. Loopback only,
bounded: every wait has a deadline.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.chaos.recommender_run import Log, metric, recommendation, serve_web
from tests.cluster.fixtures import FullNamespace
from tests.cluster.processes import free_port, http_get, tailor_process
from tests.cluster.prometheus import PrometheusFactory
from tests.cluster.waiting import wait_until

INTERVAL = 4.0
TIMEOUT = 10.0  # tailor.cli.service.call_timeout at that interval
DOWN = "tailor_recommender_dependency_up"


def _down(base: str) -> str | None:
    """The health answer once it names Prometheus (its code follows the loop, not this)."""
    health = http_get(f"{base}/health-check")[1]
    return health if "prometheus down for" in health else None


def test_a_frozen_then_stopped_prometheus_is_said_once_a_pass_and_costs_no_recommendation(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory, tmp_path: Path
) -> None:
    api = full_namespace.api
    served = serve_web(full_namespace, prometheus_server)
    url = served.prometheus.url
    server = prometheus_server.serving[url]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [
        "recommender", "--prometheus", url, "--history", "5d", "--interval", f"{INTERVAL:g}s",
        "--kubeconfig", str(full_namespace.cluster.kubeconfig), "--metrics-port", str(port),
    ]  # fmt: skip
    log = Log(tmp_path / "recommender.log")
    with tailor_process(command, log.path) as service:
        kept = wait_until(
            lambda: recommendation(api.get(served.vpa_path).get("status")),
            timeout=90,
            what="a first recommendation",
        )

        os.kill(server.pid, signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            said = wait_until(
                lambda: log.next_with("prometheus unavailable"), timeout=40, what="frozen said"
            )
            said_after = time.monotonic() - frozen
            assert f"Prometheus at {url} did not answer within {TIMEOUT:g} s" in said
            assert "kept: every VPA's last recommendation and conditions" in said
            # the line is logged, then the state recorded: both within a moment
            wait_until(lambda: _down(base), timeout=10, what="health names it")
            assert metric(http_get(f"{base}/metrics")[1], DOWN, dependency="prometheus") == 0
            errors_before = log.count("ERROR")
            time.sleep(3 * INTERVAL)
            errors = log.count("ERROR") - errors_before
            frozen_for = time.monotonic() - frozen
        finally:
            os.kill(server.pid, signal.SIGCONT)
        resumed = wait_until(
            lambda: log.next_with("prometheus answers again"), timeout=40, what="resumed"
        )
        assert "prometheus answers again" in resumed
        assert recommendation(api.get(served.vpa_path)["status"]) == kept
        # one error line a pass at most (each waits the 10 s timeout: 12 s hold at most two
        # more), no traceback
        assert errors <= 2, log.lines()[-10:]
        assert "Traceback" not in log.path.read_text()

        prometheus_server.stop(served.prometheus)
        stopped = time.monotonic()
        refused = wait_until(
            lambda: log.next_with("prometheus unavailable"), timeout=40, what="stopped said"
        )
        refused_after = time.monotonic() - stopped
        assert f"cannot reach Prometheus at {url}" in refused
        wait_until(lambda: _down(base), timeout=10, what="health names it again")
        assert recommendation(api.get(served.vpa_path)["status"]) == kept
        assert service.process.poll() is None
    assert service.code == 0, log.lines()[-20:]
    print(
        f"\nchaos prometheus: frozen said after {said_after:.1f}s (interval {INTERVAL:g}s, "
        f"timeout {TIMEOUT:g}s); {errors} error lines in {frozen_for - said_after:.0f}s frozen; "
        f"stopped said after {refused_after:.1f}s; recommendation kept throughout"
    )
