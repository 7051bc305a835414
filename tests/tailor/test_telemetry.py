"""tailor.telemetry: pass counting, the health rule, and the endpoint over real HTTP."""

from __future__ import annotations

import logging
import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tailor.telemetry import (
    API_SERVER,
    PROMETHEUS,
    ServiceTelemetry,
    TelemetryServer,
    answered,
    outage,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def samples(telemetry: ServiceTelemetry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = _get(TelemetryServer(telemetry, "127.0.0.1").start(), "/metrics")[1]
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _get(server: TelemetryServer, path: str) -> tuple[int, str]:
    try:
        url = f"http://127.0.0.1:{server.port}{path}"
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    finally:
        server.stop()


def test_healthy_while_a_pass_finished_within_the_allowed_time_and_from_the_start() -> None:
    clock = Clock()
    telemetry = ServiceTelemetry("updater", stale_after_seconds=300, clock=clock)
    assert telemetry.health() == (True, "ok")  # the start counts: a slow first pass is fine
    clock.now += 301
    healthy, why = telemetry.health()
    assert not healthy
    assert why == "no pass finished for 301s (allowed 300s)"
    telemetry.record_pass(False, 2.0)  # a failed pass does not make it healthy
    assert not telemetry.health()[0]
    telemetry.record_pass(True, 2.0)
    assert telemetry.health() == (True, "ok")
    clock.now += 300
    assert telemetry.health()[0]


def test_a_service_whose_passes_are_slow_gets_three_of_its_slowest_pass() -> None:
    clock = Clock()
    telemetry = ServiceTelemetry("recommender", stale_after_seconds=300, clock=clock)
    telemetry.record_pass(False, 900.0)  # a failing pass (timeouts) does not count
    assert telemetry.health()[0]
    telemetry.record_pass(True, 400.0)  # a big cluster: one pass outlasts five intervals
    clock.now += 1_100
    assert telemetry.health() == (True, "ok")
    clock.now += 101
    assert telemetry.health() == (False, "no pass finished for 1201s (allowed 1200s)")


def test_a_first_pass_still_reading_history_is_alive_while_its_chunks_arrive() -> None:
    clock = Clock()
    telemetry = ServiceTelemetry("recommender", stale_after_seconds=300, clock=clock)
    for _ in range(4):  # 20 minutes of one pass, a chunk read every 5 minutes
        clock.now += 290
        telemetry.record_activity()
        assert telemetry.health() == (True, "ok")
    clock.now += 301  # then nothing at all: stuck
    assert telemetry.health() == (False, "no pass finished for 301s (allowed 300s)")


def test_metrics_count_passes_by_outcome_and_time_them() -> None:
    clock = Clock()
    telemetry = ServiceTelemetry("recommender", stale_after_seconds=60, clock=clock)
    before = samples(telemetry)
    assert before[("tailor_recommender_passes_total", (("outcome", "failed"),))] == 0
    assert before[("tailor_recommender_passes_total", (("outcome", "ok"),))] == 0
    telemetry.record_pass(True, 0.3)
    clock.now += 10
    telemetry.record_pass(True, 0.7)
    telemetry.record_pass(False, 42.0)
    after = samples(telemetry)
    assert after[("tailor_recommender_passes_total", (("outcome", "ok"),))] == 2
    assert after[("tailor_recommender_passes_total", (("outcome", "failed"),))] == 1
    assert after[("tailor_recommender_pass_duration_seconds_count", ())] == 3
    assert after[("tailor_recommender_pass_duration_seconds_sum", ())] == pytest.approx(43.0)
    assert after[("tailor_recommender_pass_duration_seconds_bucket", (("le", "1.0"),))] == 2
    assert after[("tailor_recommender_last_success_timestamp_seconds", ())] == 1_010.0


def test_an_elected_replica_says_it_stands_by_until_it_wins_the_lease() -> None:
    alone = samples(ServiceTelemetry("updater", 60))
    assert alone[("tailor_updater_leader", ())] == 1  # without election a replica works
    # with election, /metrics is up while the first lease attempt runs: it must not say
    # 1 then (a test saw two replicas "leading" at once in that window)
    elected = ServiceTelemetry("updater", 60, elected=True)
    assert samples(elected)[("tailor_updater_leader", ())] == 0


def test_each_service_has_its_own_registry() -> None:
    first = ServiceTelemetry("updater", 60)
    second = ServiceTelemetry("updater", 60)  # the global registry would refuse a duplicate
    first.record_pass(True, 1.0)
    assert samples(second)[("tailor_updater_passes_total", (("outcome", "ok"),))] == 0


def test_the_endpoint_answers_health_with_200_or_500_and_unknown_paths_with_404() -> None:
    clock = Clock()
    telemetry = ServiceTelemetry("admission", stale_after_seconds=5, clock=clock)
    assert _get(TelemetryServer(telemetry, "127.0.0.1").start(), "/health-check") == (200, "ok\n")
    clock.now += 6
    status, text = _get(TelemetryServer(telemetry, "127.0.0.1").start(), "/health-check")
    assert (status, text) == (500, "no pass finished for 6s (allowed 5s)\n")
    assert _get(TelemetryServer(telemetry, "127.0.0.1").start(), "/")[0] == 404


def test_a_port_in_use_is_refused_before_serving() -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        with pytest.raises(OSError):
            TelemetryServer(ServiceTelemetry("updater", 60), "127.0.0.1", port)


def test_a_dependency_down_is_named_in_the_health_answer_and_its_metrics(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The probe's code stays 200 while passes run (a restart cures no outage); the answer
    names the dependency, since when, why and what was kept; the metrics say it too."""
    clock = Clock()
    telemetry = ServiceTelemetry(
        "recommender", 300, clock=clock, dependencies=(API_SERVER, PROMETHEUS)
    )
    log = logging.getLogger("test.outage")
    before = samples(telemetry)
    assert before[("tailor_recommender_dependency_up", (("dependency", "prometheus"),))] == 1
    with caplog.at_level(logging.INFO, logger="test.outage"):
        outage(log, telemetry, PROMETHEUS, "Prometheus at http://p did not answer", "the lot")
        clock.now += 75
        outage(log, telemetry, PROMETHEUS, "Prometheus at http://p did not answer", "the lot")
        telemetry.record_pass(False, 5.0)
        healthy, why = telemetry.health()
        assert healthy
        assert why.splitlines()[1] == (
            "prometheus down for 75s: Prometheus at http://p did not answer; kept: the lot"
        )
        during = samples(telemetry)
        answered(log, telemetry, API_SERVER, PROMETHEUS)
    assert during[("tailor_recommender_dependency_up", (("dependency", "prometheus"),))] == 0
    assert during[("tailor_recommender_dependency_up", (("dependency", "api-server"),))] == 1
    key = ("tailor_recommender_dependency_failures_total", (("dependency", "prometheus"),))
    assert during[key] == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    said = "prometheus unavailable: Prometheus at http://p did not answer; kept: the lot; "
    assert errors == [said + "retrying next pass"] * 2
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["prometheus answers again, after 75s down"]
    assert telemetry.health() == (True, "ok")
