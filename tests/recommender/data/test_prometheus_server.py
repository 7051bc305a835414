"""The Prometheus source against a real Prometheus holding a backfilled history.

The history is written with our OpenMetrics writer, backfilled with promtool and
read back with `load_prometheus_history`; what comes back must EQUAL what was
written (cpu to 1e-9 relative, memory and requests/limits exactly).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.prometheus import (
    PrometheusSettings,
    PrometheusSourceError,
    load_prometheus_history,
)
from recommender.data.prometheus_http import Fetcher, connect
from recommender.data.promql import plan_chunks
from recommender.data.schema import KEY_LABELS, validate_events, validate_usage
from tests.cluster.prometheus import backfill_end

pytestmark = pytest.mark.prometheus

STEP = 300
GIB = 2**30
QUOTE_POD = 'we"ird\\pod-0'
# (namespace, workload, pod, container)
CONTAINERS = [
    ("team.a", "web", "web-5d8f7c9b6d-x2x4z", "app"),
    ("team.a", "web", "web-5d8f7c9b6d-x2x4z", "proxy"),
    ("teamxa", 'we"ird\\pod', QUOTE_POD, "worker"),
    ("teamxa", "batch", "batch-6c9d8b7f5-qwrtz", "job"),
]


@dataclass(frozen=True)
class History:
    usage: pd.DataFrame
    events: pd.DataFrame
    start: datetime
    end: datetime
    oom_at: datetime
    evicted_at: datetime


def build_history() -> History:
    """2 days 6 h at 5-min samples, with a changing request, a gap, an OOM and an eviction."""
    rng = np.random.default_rng(20240611)
    end = backfill_end()
    start = end - 2 * 86400 - 6 * 3600
    times = np.arange(start, end, STEP)
    oom_at = start + 86400 + 137
    evicted_at = start + 2 * 86400 - 60
    frames = []
    for index, (namespace, workload, pod, container) in enumerate(CONTAINERS):
        cpu = rng.lognormal(mean=-1.5, sigma=0.8, size=times.size)
        cpu[rng.random(times.size) < 0.05] = 0.0
        memory = rng.integers(50_000_000, 900_000_000, size=times.size).astype(np.float64)
        frame = pd.DataFrame(
            {
                "timestamp": pd.to_datetime(times, unit="s", utc=True),
                "namespace": namespace,
                "workload": workload,
                "pod": pod,
                "container": container,
                "cpu": cpu,
                "memory": memory,
                "cpu_request": np.where(times < start + 86400 / 2, 0.25, 0.5 + 0.125 * index),
                "memory_request": 256.0 * 2**20,
                "cpu_limit": np.nan if container == "proxy" else 2.0,
                "memory_limit": np.where(times < start + 1.5 * 86400, 1.0 * GIB, 2.0 * GIB),
                # cAdvisor counts throttling only under a CPU limit; here "app" hits it
                "cpu_throttled": np.nan
                if container == "proxy"
                else np.where((container == "app") & (cpu > 0.3), cpu / 3, 0.0),
            }
        )
        if container == "proxy":  # three missing windows in the middle of the series
            frame = frame.drop(index=range(300, 303))
        if container == "job":  # evicted: no usage after the window holding the eviction
            frame = frame[frame["timestamp"] < pd.Timestamp(evicted_at, unit="s", tz="UTC")]
        frames.append(frame)
    usage = pd.concat(frames, ignore_index=True)
    events = pd.DataFrame(
        {
            "timestamp": pd.to_datetime([oom_at, evicted_at], unit="s", utc=True),
            "namespace": ["teamxa", "teamxa"],
            "pod": [QUOTE_POD, "batch-6c9d8b7f5-qwrtz"],
            "container": ["worker", "job"],
            "reason": ["OOMKilled", "Evicted"],
            "memory": [1.0 * GIB, 0.0],
        }
    )
    return History(
        usage=validate_usage(usage, "written history"),
        events=events,
        start=datetime.fromtimestamp(start, UTC),
        end=datetime.fromtimestamp(end, UTC),
        oom_at=datetime.fromtimestamp(oom_at, UTC),
        evicted_at=datetime.fromtimestamp(evicted_at, UTC),
    )


@pytest.fixture(scope="module")
def history() -> History:
    return build_history()


@pytest.fixture(scope="module")
def server_url(prometheus_server, history: History) -> str:
    text = usage_to_openmetrics(history.usage, history.events, extra_labels={"cluster": "prod"})
    instance = prometheus_server.start(text)
    print(
        f"prometheus fixture: backfill {instance.backfill_seconds:.2f} s, "
        f"ready {instance.startup_seconds:.2f} s"
    )
    return instance.url


def settings_for(url: str, history: History, **overrides) -> PrometheusSettings:
    return PrometheusSettings(url=url, start=history.start, end=history.end, retries=0, **overrides)


def assert_usage_equal(loaded: pd.DataFrame, written: pd.DataFrame) -> None:
    """Keys, timestamps and resources exactly; cpu and its throttling to 1e-9 relative.
    The loaded keys are categorical (the history is held columnar), compared as text."""
    assert len(loaded) == len(written)
    counted = ["cpu", "cpu_throttled"]
    exact = [c for c in written.columns if c not in counted]
    keys = {name: written[name].dtype for name in KEY_LABELS}
    pd.testing.assert_frame_equal(
        loaded[exact].astype(keys).reset_index(drop=True), written[exact].reset_index(drop=True)
    )
    for column in counted:
        np.testing.assert_allclose(loaded[column], written[column], rtol=1e-9, atol=1e-12)


def test_usage_reads_back_equal_to_what_was_written(server_url: str, history: History) -> None:
    usage, _ = load_prometheus_history(settings_for(server_url, history))
    assert_usage_equal(usage, history.usage)
    assert usage["memory"].to_numpy().tolist() == history.usage["memory"].to_numpy().tolist()
    assert set(usage["workload"]) == {"web", 'we"ird\\pod', "batch"}


def test_throttling_is_read_where_cadvisor_exports_it(server_url: str, history: History) -> None:
    usage, _ = load_prometheus_history(settings_for(server_url, history))
    by_container = usage.groupby("container")["cpu_throttled"]
    assert by_container.apply(lambda held: held.isna().all())["proxy"]  # no CPU limit
    assert (by_container.max()[["worker", "job"]] == 0).all()  # a limit never reached
    app = usage[usage["container"] == "app"]
    throttled = app["cpu_throttled"] > 0
    assert 0.1 < throttled.mean() < 0.9
    np.testing.assert_allclose(app.loc[throttled, "cpu_throttled"], app.loc[throttled, "cpu"] / 3)


def test_oom_and_eviction_events_are_found(server_url: str, history: History) -> None:
    _, events = load_prometheus_history(settings_for(server_url, history))
    assert list(events["reason"]) == ["Evicted", "OOMKilled"]  # sorted by series
    oom = events[events["reason"] == "OOMKilled"].iloc[0]
    assert (oom["namespace"], oom["pod"], oom["container"]) == ("teamxa", QUOTE_POD, "worker")
    assert timedelta(0) <= oom["timestamp"] - history.oom_at < timedelta(seconds=STEP)
    assert oom["memory"] == 1.0 * GIB  # the memory limit in force at the kill
    evicted = events[events["reason"] == "Evicted"].iloc[0]
    assert evicted["container"] == "job"
    assert timedelta(0) <= evicted["timestamp"] - history.evicted_at < timedelta(seconds=STEP)
    job = history.usage[history.usage["container"] == "job"]
    # its peak in the last window wholly before the eviction: the window holding it may
    # hold a replacement pod's samples under the same name
    assert evicted["memory"] == job["memory"].iloc[-2]


def test_chunked_equals_unchunked(server_url: str, history: History) -> None:
    calls: list[tuple[int, int]] = []
    chunked_settings = settings_for(server_url, history, chunk=timedelta(hours=7))
    chunked = load_prometheus_history(chunked_settings, progress=lambda d, t: calls.append((d, t)))
    whole = load_prometheus_history(settings_for(server_url, history, chunk=timedelta(days=3)))
    pd.testing.assert_frame_equal(chunked[0], whole[0], check_exact=True)
    pd.testing.assert_frame_equal(chunked[1], whole[1], check_exact=True)
    start, end = chunked_settings.resolve_range()
    chunks = plan_chunks(start, end, STEP, 7 * 3600)
    assert len(chunks) == 8
    # one call per answered query: 11 per chunk (requests, limits, restarts and OOM kills
    # twice: app and init containers), 4 per piece of at most 6 hours (the two counters,
    # bare and their raw samples), then the owners over the whole range
    pieces = sum(len(plan_chunks(*chunk, STEP, 6 * 3600)) for chunk in chunks)
    assert pieces == 15
    total = 8 * 11 + 4 * pieces + 1
    assert calls == [(done, total) for done in range(1, total + 1)]


def test_namespace_filter_escapes_regex_characters(server_url: str, history: History) -> None:
    usage, events = load_prometheus_history(
        settings_for(server_url, history, namespaces=("team.a",))
    )
    assert set(usage["namespace"]) == {"team.a"}  # an unescaped "." would match "teamxa"
    assert_usage_equal(usage, history.usage[history.usage["namespace"] == "team.a"])
    assert events.empty


def test_label_values_with_quote_and_backslash_reach_the_server(
    server_url: str, history: History
) -> None:
    settings = settings_for(server_url, history, extra_matchers={"pod": QUOTE_POD})
    usage, events = load_prometheus_history(settings)
    assert set(usage["pod"]) == {QUOTE_POD}
    assert_usage_equal(usage, history.usage[history.usage["pod"] == QUOTE_POD])
    assert list(events["reason"]) == ["OOMKilled"]


def test_extra_matcher_selects_the_cluster(server_url: str, history: History) -> None:
    usage, _ = load_prometheus_history(
        settings_for(server_url, history, extra_matchers={"cluster": "prod"})
    )
    assert len(usage) == len(history.usage)
    with pytest.raises(PrometheusSourceError, match=r"no usage .*cluster=\"dev\""):
        load_prometheus_history(
            settings_for(server_url, history, extra_matchers={"cluster": "dev"})
        )


def test_coarser_step_averages_cpu_and_keeps_memory_peaks(
    server_url: str, history: History
) -> None:
    usage, _ = load_prometheus_history(settings_for(server_url, history, step=timedelta(hours=1)))
    app = history.usage[history.usage["container"] == "app"]
    hourly = app.set_index("timestamp").resample("1h")
    loaded = usage[usage["container"] == "app"].set_index("timestamp")
    np.testing.assert_allclose(loaded["cpu"], hourly["cpu"].mean(), rtol=1e-9)
    np.testing.assert_array_equal(loaded["memory"], hourly["memory"].max())


def test_events_are_valid_canonical_events(server_url: str, history: History) -> None:
    _, events = load_prometheus_history(settings_for(server_url, history))
    pd.testing.assert_frame_equal(events, validate_events(events, "reloaded"))


@pytest.mark.parametrize(("compressed", "encoding"), [(False, None), (True, "gzip")])
def test_answers_come_uncompressed_unless_asked(
    server_url: str, history: History, compressed: bool, encoding: str | None
) -> None:
    """gzip cost Prometheus several times the CPU of the answer itself: off by default."""
    settings = settings_for(server_url, history, compressed=compressed)
    client = connect(settings)
    try:
        answer = Fetcher(settings, client).answer(
            "query", {"query": "container_memory_working_set_bytes", "time": settings_end(settings)}
        )
    finally:
        client.close()
    assert answer.headers.get("Content-Encoding") == encoding
    assert b'"resultType":"vector"' in answer.content


def test_a_gzipped_load_equals_the_uncompressed_one(server_url: str, history: History) -> None:
    """Each body is read whole from the socket (`Fetcher.body`): inflated where asked."""
    plain = load_prometheus_history(settings_for(server_url, history))
    gzipped = load_prometheus_history(settings_for(server_url, history, compressed=True))
    assert len(plain[0]) > 0
    pd.testing.assert_frame_equal(gzipped[0], plain[0], check_exact=True)
    pd.testing.assert_frame_equal(gzipped[1], plain[1], check_exact=True)


def settings_end(settings: PrometheusSettings) -> int:
    return settings.resolve_range()[1]
