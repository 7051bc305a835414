"""`tailor recommender` killed with SIGKILL mid-pass, and writing beside another controller.

Kill -9: the recommender is killed five times at random moments of its first passes
(interval 1 s; the printed mean pass time says what share of kills land mid-pass, about
half on an idle machine, where a pass takes about 0.5 s); after every kill the VPA still has
its recommendation and the other writer's conditions, and the schedule ConfigMap still
reads whole; a last run writes again. Writers: while the recommender writes every second,
another controller adds 20 conditions to the same VPA's status; every one is kept.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from tailor.api.vpa import VerticalPodAutoscaler
from tailor.schedule_configmap import decode_schedule
from tests.chaos.recommender_run import Log, mean_pass_seconds, recommendation, serve_web
from tests.cluster.fixtures import FullNamespace
from tests.cluster.processes import free_port, http_get, tailor_process
from tests.cluster.prometheus import PrometheusFactory
from tests.cluster.rawapi import JSON_PATCH, Json, RawApi
from tests.cluster.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
KILLS = 5
OTHERS = 20


def _condition(kind: str) -> Json:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"type": kind, "status": "True", "lastTransitionTime": stamp, "message": "theirs"}


def _add_condition(api: RawApi, vpa_path: str, kind: str) -> None:
    """Another controller's write: one condition appended with a JSON patch."""
    status = api.get(vpa_path).get("status") or {}
    if "conditions" not in status:
        patch = [{"op": "add", "path": "/status", "value": {**status, "conditions": []}}]
        api.patch(f"{vpa_path}/status", patch, JSON_PATCH)
    add = [{"op": "add", "path": "/status/conditions/-", "value": _condition(kind)}]
    api.patch(f"{vpa_path}/status", add, JSON_PATCH)


def _command(full: FullNamespace, url: str, port: int, namespace: str) -> list[str]:
    return [
        "recommender", "--prometheus", url, "--history", "5d", "--interval", "1s",
        "--strategy", "forecast", "--schedule-configmap", f"{namespace}/tailor-schedule",
        "--kubeconfig", str(full.cluster.kubeconfig), "--metrics-port", str(port),
    ]  # fmt: skip


def _whole(api: RawApi, vpa_path: str, namespace: str) -> tuple[Json, int]:
    """The VPA's status, which must parse and hold a recommendation and the other writer's
    condition, and the number of schedule rows, which must decode."""
    document = api.get(vpa_path)
    VerticalPodAutoscaler.from_api(document)
    status = document["status"]
    assert recommendation(status), status
    assert "Theirs" in [c["type"] for c in status["conditions"]], status
    config = api.get(f"/api/v1/namespaces/{namespace}/configmaps/tailor-schedule")
    keys = {**(config.get("binaryData") or {}), **(config.get("data") or {})}
    return status, len(decode_schedule(keys, "tailor-schedule"))


def test_kill_9_mid_pass_loses_no_recommendation_no_condition_no_schedule(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    served = serve_web(full_namespace, prometheus_server)
    port = free_port()
    command = _command(full_namespace, served.prometheus.url, port, namespace)
    first = Log(tmp_path / "first.log")
    with tailor_process(command, first.path):
        wait_until(
            lambda: recommendation(api.get(served.vpa_path).get("status")),
            timeout=90,
            what="a first recommendation",
        )
        _add_condition(api, served.vpa_path, "Theirs")
        wait_until(lambda: http_get(f"http://127.0.0.1:{port}/metrics")[0] == 200, what="metrics")
        time.sleep(5)  # a few passes, to time them
        pass_seconds = mean_pass_seconds(http_get(f"http://127.0.0.1:{port}/metrics")[1])
    _whole(api, served.vpa_path, namespace)

    chance = random.Random(42)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    moments = []
    for kill in range(KILLS):
        with (tmp_path / f"kill-{kill}.log").open("w") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "tailor.cli.main", *command],
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=environment,
            )
            # the process imports for about a second, then passes run back to back
            moment = chance.uniform(2.0, 2.0 + 2 * pass_seconds)
            time.sleep(moment)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        moments.append(moment)
        _, rows = _whole(api, served.vpa_path, namespace)
        assert rows > 0

    last = Log(tmp_path / "last.log")
    with tailor_process(command, last.path):  # a whole pass after the kills
        wait_until(lambda: last.next_with("recommended:"), timeout=90, what="a pass")
    _, rows = _whole(api, served.vpa_path, namespace)
    print(
        f"\nchaos kill -9: {KILLS} kills at {', '.join(f'{m:.1f}' for m in moments)} s "
        f"after start (passes {pass_seconds:.2f} s on average, at interval 1 s); "
        f"after each: recommendation, the other writer's condition and {rows} schedule rows kept"
    )


def test_twenty_conditions_another_controller_adds_during_passes_are_all_kept(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    served = serve_web(full_namespace, prometheus_server)
    port = free_port()
    command = _command(full_namespace, served.prometheus.url, port, namespace)
    log = Log(tmp_path / "recommender.log")
    with tailor_process(command, log.path):
        wait_until(
            lambda: recommendation(api.get(served.vpa_path).get("status")),
            timeout=90,
            what="a first recommendation",
        )
        started = api.get(served.vpa_path)["metadata"]["resourceVersion"]
        failures: list[BaseException] = []

        def other_controller() -> None:
            try:
                for index in range(OTHERS):
                    _add_condition(api, served.vpa_path, f"Other{index}")
                    time.sleep(0.25)
            except BaseException as error:  # reported by the test, not lost in the thread
                failures.append(error)

        writer = threading.Thread(target=other_controller)
        writer.start()
        writer.join(timeout=60)
        assert not failures, failures
        # two more passes of ours after the last of theirs
        passes = log.count("recommended:")
        wait_until(lambda: log.count("recommended:") >= passes + 2, timeout=30, what="passes")
    status = api.get(served.vpa_path)["status"]
    types = [c["type"] for c in status["conditions"]]
    kept = sorted(t for t in types if t.startswith("Other"))
    assert kept == sorted(f"Other{i}" for i in range(OTHERS)), types
    assert "RecommendationProvided" in types and len(types) == len(set(types))
    assert api.get(served.vpa_path)["metadata"]["resourceVersion"] != started
    print(f"\nchaos status writers: {len(kept)} of {OTHERS} conditions kept beside ours")
