"""A native sidecar's kube-state-metrics history, read from a real Prometheus.

kube-state-metrics exports an init container's requests, limits, restarts and last
termination under `kube_pod_init_container_*` names, apart from the app containers'
(cAdvisor names both alike). The history here holds a pod whose app container is
exported as such and whose sidecar (`restartPolicy: Always`) is exported only under
the init names, OOM-killed once: the source must read the sidecar's requests and
limits and that kill, or its memory would never be raised after an OOM.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.prometheus import PrometheusSettings, load_prometheus_history
from recommender.data.promql import MetricNames, QueryNames
from recommender.data.schema import KEY_LABELS, validate_usage
from tests.cluster.prometheus import PrometheusFactory, backfill_end

pytestmark = pytest.mark.prometheus

STEP = 300
Mi = 2**20
NAMESPACE, WORKLOAD, POD = "shop", "web", "web-5d8f7c9b6d-x2x4z"
SIDECAR_LIMIT = 128.0 * Mi


def merge_openmetrics(*texts: str) -> str:
    """One OpenMetrics text holding the families of every text, each written whole
    (the format forbids interleaving them); a sample line present twice (the pod's
    owner, written with each container) is kept once."""
    headers: dict[str, list[str]] = {}
    samples: dict[str, dict[str, None]] = {}
    for text in texts:
        family = ""
        for line in text.splitlines():
            if line == "# EOF":
                break
            if line.startswith("# HELP "):
                family = line.split()[2]
                headers.setdefault(family, [])
                samples.setdefault(family, {})
            if line.startswith("#"):
                if len(headers[family]) < 2:
                    headers[family].append(line)
            else:
                samples[family][line] = None
    lines = [line for name in headers for line in (*headers[name], *samples[name])]
    return "\n".join([*lines, "# EOF"]) + "\n"


def history(end: int) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """6 h of the app container and its sidecar; the sidecar is OOM-killed once."""
    start = end - 6 * 3600
    times = np.arange(start, end, STEP)
    rng = np.random.default_rng(7)

    def container(name: str, cpu_request: float, memory_request: float, memory_limit: float):
        return pd.DataFrame(
            {
                "timestamp": pd.to_datetime(times, unit="s", utc=True),
                "namespace": NAMESPACE,
                "workload": WORKLOAD,
                "pod": POD,
                "container": name,
                "cpu": rng.uniform(0.01, 0.4, times.size),
                "memory": rng.integers(20, 100, times.size).astype(np.float64) * Mi,
                "cpu_request": cpu_request,
                "memory_request": memory_request,
                "cpu_limit": np.nan,
                "memory_limit": memory_limit,
            }
        )

    usage = pd.concat(
        [
            container("app", 0.5, 256.0 * Mi, 512.0 * Mi),
            container("proxy", 0.1, 64.0 * Mi, SIDECAR_LIMIT),
        ],
        ignore_index=True,
    )
    oom_at = start + 3 * 3600 + 137
    events = pd.DataFrame(
        {
            "timestamp": pd.to_datetime([oom_at], unit="s", utc=True),
            "namespace": [NAMESPACE],
            "pod": [POD],
            "container": ["proxy"],
            "reason": ["OOMKilled"],
            "memory": [SIDECAR_LIMIT],
        }
    )
    return validate_usage(usage, "written history"), events, oom_at


def kube_state_metrics_text(usage: pd.DataFrame, events: pd.DataFrame) -> str:
    """The app container under kube-state-metrics' container names, the sidecar under
    its init-container names only, both written by the product's writer."""
    default = MetricNames()
    as_init = QueryNames(
        metrics=MetricNames(
            requests=default.init_requests,
            limits=default.init_limits,
            restarts=default.init_restarts,
            last_terminated_reason=default.init_last_terminated_reason,
        )
    )
    app = usage["container"] == "app"
    sidecar_text = usage_to_openmetrics(usage[~app], events, step=STEP, names=as_init)
    assert "kube_pod_init_container_status_restarts_total{" in sidecar_text
    assert "kube_pod_container_" not in sidecar_text
    return merge_openmetrics(usage_to_openmetrics(usage[app], step=STEP), sidecar_text)


class ReadBack(NamedTuple):
    written: pd.DataFrame
    usage: pd.DataFrame
    events: pd.DataFrame
    oom_at: int


@pytest.fixture(scope="module")
def read_back(prometheus_server: PrometheusFactory) -> ReadBack:
    """The history backfilled, then read by the product's source."""
    end = backfill_end()
    usage, events, oom_at = history(end)
    instance = prometheus_server.start(kube_state_metrics_text(usage, events))
    settings = PrometheusSettings(
        url=instance.url,
        start=datetime.fromtimestamp(end - 6 * 3600, UTC),
        end=datetime.fromtimestamp(end, UTC),
        step=timedelta(seconds=STEP),
        retries=0,
    )
    loaded, found = load_prometheus_history(settings)
    return ReadBack(usage, loaded, found, oom_at)


def test_a_sidecars_requests_and_limits_reach_the_history(read_back: ReadBack) -> None:
    usage, loaded = read_back.written, read_back.usage
    proxy = loaded[loaded["container"] == "proxy"]
    assert len(proxy) == 6 * 3600 // STEP  # cAdvisor's usage: read before as well
    assert proxy["cpu_request"].tolist() == [0.1] * len(proxy)
    assert proxy["memory_request"].tolist() == [64.0 * Mi] * len(proxy)
    assert proxy["memory_limit"].tolist() == [SIDECAR_LIMIT] * len(proxy)
    assert proxy["cpu_limit"].isna().all()
    # everything as written, the app container's columns included
    assert len(loaded) == len(usage)
    exact = [column for column in usage.columns if column != "cpu"]
    as_text = {name: usage[name].dtype for name in KEY_LABELS}  # loaded: categorical
    pd.testing.assert_frame_equal(
        loaded[exact].astype(as_text).reset_index(drop=True), usage[exact].reset_index(drop=True)
    )
    np.testing.assert_allclose(loaded["cpu"], usage["cpu"], rtol=1e-9)


def test_a_sidecars_oom_kill_reaches_the_history(read_back: ReadBack) -> None:
    found = read_back.events
    assert found[["namespace", "pod", "container", "reason"]].values.tolist() == [
        [NAMESPACE, POD, "proxy", "OOMKilled"]
    ]
    kill = found.iloc[0]
    shown_after = kill["timestamp"] - datetime.fromtimestamp(read_back.oom_at, UTC)
    assert timedelta(0) <= shown_after < timedelta(seconds=STEP)
    assert kill["memory"] == SIDECAR_LIMIT  # the sidecar's memory limit in force
    assert kill["workload"] == WORKLOAD
