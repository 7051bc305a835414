"""The Prometheus source on a relabelled cluster (`--prometheus-set`) and behind basic auth.

The history of `test_prometheus_server` is backfilled as an older or differently
scraped cluster records it: cAdvisor's series labelled `pod_name` / `container_name`
(Kubernetes before 1.16), memory as `container_memory_rss`, and kube-state-metrics
scraped without `honor_labels`, so its own labels became `exported_namespace`,
`exported_pod`, `exported_container` and the scrape target's `namespace`, `pod` and
`container` took their place. Read with the names it was written under, the history
must come back equal; read with upstream's names it must be a clear error, not an
empty or silently wrong answer.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.prometheus import (
    EmptyHistoryError,
    PrometheusSettings,
    PrometheusSourceError,
    load_prometheus_history,
)
from recommender.data.promql import LabelNames, MetricNames, QueryNames
from recommender.recommend import recommend_vpa
from tailor.cli.main import app
from tests.cli_text import plain
from tests.recommender.data.test_prometheus_server import (
    QUOTE_POD,
    History,
    assert_usage_equal,
    build_history,
)

pytestmark = pytest.mark.prometheus

CADVISOR = LabelNames(pod="pod_name", container="container_name")
STATE = LabelNames(
    namespace="exported_namespace", pod="exported_pod", container="exported_container"
)
NAMES = QueryNames(
    metrics=MetricNames(memory_working_set="container_memory_rss"),
    labels=CADVISOR,
    state_labels=STATE,
)
FLAGS = [
    "--prometheus-set=labels.pod=pod_name",
    "--prometheus-set=labels.container=container_name",
    "--prometheus-set=metrics.memory_working_set=container_memory_rss",
    "--prometheus-set=state_labels.namespace=exported_namespace",
    "--prometheus-set=state_labels.pod=exported_pod",
    "--prometheus-set=state_labels.container=exported_container",
]
# What a scrape without honor_labels adds to kube-state-metrics' series: its own target.
SCRAPE_TARGET = 'namespace="monitoring",pod="kube-state-metrics-0",container="ksm",'


def scraped_without_honor_labels(text: str) -> str:
    return re.sub(r"^(kube_[a-z_]+)\{", lambda m: m.group(0) + SCRAPE_TARGET, text, flags=re.M)


@pytest.fixture(scope="module")
def history() -> History:
    return build_history()


@pytest.fixture(scope="module")
def server_url(prometheus_server, history: History) -> str:
    text = usage_to_openmetrics(history.usage, history.events, names=NAMES)
    assert "pod_name=" in text and "exported_pod=" in text
    return prometheus_server.start(scraped_without_honor_labels(text)).url


def settings_for(url: str, history: History, names: QueryNames) -> PrometheusSettings:
    return PrometheusSettings(url=url, start=history.start, end=history.end, retries=0, names=names)


def test_history_reads_back_equal_under_the_names_it_was_written_with(
    server_url: str, history: History
) -> None:
    usage, events = load_prometheus_history(settings_for(server_url, history, NAMES))
    assert_usage_equal(usage, history.usage)  # requests, limits and workloads included
    assert list(events["reason"]) == ["Evicted", "OOMKilled"]
    oom = events[events["reason"] == "OOMKilled"].iloc[0]
    assert (oom["namespace"], oom["pod"], oom["container"]) == ("teamxa", QUOTE_POD, "worker")
    assert oom["memory"] == history.usage["memory_limit"].min()  # the limit at the kill


def test_upstreams_names_find_nothing_and_say_what_to_check(
    server_url: str, history: History
) -> None:
    with pytest.raises(EmptyHistoryError, match="check the metric and label names"):
        load_prometheus_history(settings_for(server_url, history, QueryNames()))


def test_missing_kube_state_metrics_is_a_warning_not_a_wrong_answer_in_silence(
    server_url: str, history: History, caplog: pytest.LogCaptureFixture
) -> None:
    """Right cAdvisor names, upstream's for kube-state-metrics: the scrape target's own
    `namespace` and `pod` labels must not pass for the containers'."""
    names = QueryNames(metrics=NAMES.metrics, labels=CADVISOR)
    with caplog.at_level(logging.WARNING, logger="recommender.data.prometheus"):
        usage, events = load_prometheus_history(settings_for(server_url, history, names))
    assert "no kube-state-metrics series" in caplog.text and "state_labels" in caplog.text
    assert (usage["workload"] == usage["pod"]).all()
    assert usage["cpu_request"].isna().all()
    assert set(events["namespace"]) <= {"monitoring"}  # kube-state-metrics' own pod, if any
    np.testing.assert_array_equal(usage["memory"], history.usage["memory"])


def test_the_cli_reads_a_relabelled_cluster_with_prometheus_set(
    server_url: str, history: History
) -> None:
    runner = CliRunner()
    base = ["recommend", "--prometheus", server_url, "--history", "3d", "--format", "json"]
    result = runner.invoke(app, [*base, *FLAGS])
    assert result.exit_code == 0, result.output
    rows = pd.json_normalize(json.loads(result.stdout)).set_index(["workload", "container"])
    expected = recommend_vpa(history.usage, history.events).set_index(["workload", "container"])
    assert sorted(rows.index) == sorted(expected.index)
    pairs = {"cpu.target": "cpu_target", "memory.target": "memory_target"}
    pairs |= {"memory.upperBound": "memory_upper", "cpu.lowerBound": "cpu_lower"}
    for column, library in pairs.items():
        np.testing.assert_allclose(
            rows.loc[expected.index, column], expected[library], rtol=1e-6, err_msg=column
        )
    unnamed = runner.invoke(app, base)
    assert unnamed.exit_code == 2
    assert "container_memory_working_set_bytes" in unnamed.output
    text = plain(unnamed.output)
    assert "check the metric and label names" in text and "--prometheus-set" in text


USER, PASSWORD = "tailor", "s3cret:with colon"


@pytest.fixture(scope="module")
def guarded_url(prometheus_server, history: History) -> str:
    """The default-named history behind basic auth (upstream's --username / --password)."""
    text = usage_to_openmetrics(history.usage, history.events)
    return prometheus_server.start(text, basic_auth=(USER, PASSWORD)).url


def test_basic_auth_reads_the_history_and_a_wrong_password_is_a_clear_error(
    guarded_url: str, history: History
) -> None:
    def settings(**auth: str) -> PrometheusSettings:
        return PrometheusSettings(
            url=guarded_url, start=history.start, end=history.end, retries=0, **auth
        )

    usage, _ = load_prometheus_history(settings(username=USER, password=PASSWORD))
    assert_usage_equal(usage, history.usage)
    for auth in ({}, {"username": USER, "password": "wrong"}):
        with pytest.raises(PrometheusSourceError, match=r"refused the credentials .*401"):
            load_prometheus_history(settings(**auth))


def test_the_cli_takes_the_password_from_a_file_or_prometheus_password(
    guarded_url: str, history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    base = ["recommend", "--prometheus", guarded_url, "--history", "3d", "--format", "json"]
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    expected = recommend_vpa(history.usage, history.events)
    with_file = runner.invoke(
        app, [*base, "--prometheus-username", USER, "--prometheus-password-file", str(secret)]
    )
    assert with_file.exit_code == 0, with_file.output
    assert len(json.loads(with_file.stdout)) == len(expected)
    monkeypatch.setenv("PROMETHEUS_USERNAME", USER)
    monkeypatch.setenv("PROMETHEUS_PASSWORD", PASSWORD)
    from_env = runner.invoke(app, base)
    assert from_env.exit_code == 0, from_env.output
    assert json.loads(from_env.stdout) == json.loads(with_file.stdout)
    monkeypatch.delenv("PROMETHEUS_PASSWORD")
    missing = runner.invoke(app, base)
    assert missing.exit_code == 2
    assert "needs a password" in plain(missing.output)
    monkeypatch.delenv("PROMETHEUS_USERNAME")
    refused = runner.invoke(app, base)
    assert refused.exit_code == 2 and "refused the credentials" in plain(refused.output)
