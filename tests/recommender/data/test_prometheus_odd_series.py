"""The Prometheus source against series real clusters produce besides the clean ones.

cAdvisor exports pod-level cgroups, pause containers and, after a relabelling slip,
series without pod or namespace; two scrape jobs can export one container twice.
Each group of series carries its own `cluster` label, so a test reads exactly its
group from one backfilled server (30 s scrapes, 5-min step, six hours).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from recommender.data.prometheus import PrometheusSettings, load_prometheus_history
from recommender.data.prometheus_http import Fetcher, connect
from recommender.data.prometheus_matrix import Matrix
from recommender.data.prometheus_samples import counter_reads, samples_range
from tests.cluster.prometheus import backfill_end

pytestmark = pytest.mark.prometheus

SCRAPE = 30
STEP = 300
END = backfill_end()
START = END - 6 * 3600
WINDOWS = (END - START) // STEP

Counter = Callable[[int], float]  # scrape time -> counter value


def _labels(**labels: str | None) -> str:
    shown = {name: value for name, value in labels.items() if value is not None}
    return "{" + ",".join(f'{name}="{value}"' for name, value in shown.items()) + "}"


def _value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class History:
    """cAdvisor series sampled every SCRAPE seconds over [START, END]."""

    def __init__(self) -> None:
        self.cpu: list[str] = []
        self.memory: list[str] = []

    def add(
        self,
        cluster: str,
        cores: float = 0.5,
        memory: float = 100e6,
        *,
        counter: Counter | None = None,
        working_set: Callable[[int], float] | None = None,
        phase: int = 0,
        **labels: str | None,
    ) -> None:
        keys = {"namespace": "shop", "pod": "web-0", "container": "app", **labels}
        text = _labels(cluster=cluster, image="img", **keys)
        for at in range(START + phase, END + 1, SCRAPE):
            used = counter(at) if counter else cores * (at - START)
            peak = working_set(at) if working_set else memory
            self.cpu.append(f"container_cpu_usage_seconds_total{text} {_value(used)} {at}")
            self.memory.append(f"container_memory_working_set_bytes{text} {_value(peak)} {at}")

    def openmetrics(self) -> str:
        return "\n".join(
            [
                "# TYPE container_cpu_usage_seconds counter",
                *self.cpu,
                "# TYPE container_memory_working_set_bytes gauge",
                *self.memory,
                "# EOF",
            ]
        )


def build_history() -> History:
    history = History()
    # "edge": one real container among the cgroups a VPA must not size
    history.add("edge", 0.5, 100e6)
    history.add("edge", 50.0, 90e9, container="")  # the pod's cgroup
    history.add("edge", 40.0, 80e9, container="POD")  # the pause container
    history.add("edge", 30.0, 70e9, pod=None, container="orphan")
    history.add("edge", 20.0, 60e9, namespace=None, pod="kube-proxy-1", container="proxy")
    # "twice": one container exported by two scrape jobs
    history.add("twice", 0.25, 200e6, instance="node-1:10250", job="kubelet")
    history.add("twice", 0.25, 200e6, instance="node-1:4194", job="cadvisor")
    # "apart": two jobs scraping 10 s apart, seeing different working sets
    history.add("apart", 0.25, 200e6, instance="node-1:10250", job="kubelet")
    history.add("apart", 0.25, 210e6, instance="node-1:4194", job="cadvisor", phase=10)
    # "glitch": one exporter glitch each, an hour in
    glitch = START + 3600
    history.add("glitch", pod="clean-0")
    history.add("glitch", pod="inf-cpu-0", counter=lambda at: _spike(at, glitch, 0.5, math.inf))
    for pod, value in (("inf-mem-0", math.inf), ("huge-mem-0", 1e300), ("neg-mem-0", -5.0)):
        history.add("glitch", pod=pod, working_set=_in_window(glitch, value, 100e6))
    # "restarts": a crash loop around every hour; the new counter overtakes the old value
    history.add("restarts", 1.0, counter=_since_restart)
    history.add("restarts", 1.0, pod="steady-0")
    return history


# Restarts 30 s before and 240 s after every full hour of the history (1 core throughout).
RESTARTS = [hour + shift for hour in range(START + 3600, END + 1, 3600) for shift in (-30, 240)]


def _since_restart(at: int) -> float:
    return float(at - max([START, *(r for r in RESTARTS if r <= at)]))


def _spike(at: int, when: int, cores: float, value: float) -> float:
    return value if at == when else cores * (at - START)


def _in_window(start: int, value: float, otherwise: float) -> Callable[[int], float]:
    """A working set equal to `value` throughout the window [start, start + STEP)."""
    return lambda at: value if start <= at < start + STEP else otherwise


@pytest.fixture(scope="module")
def server_url(prometheus_server) -> str:
    return prometheus_server.start(build_history().openmetrics() + "\n").url


def load(url: str, cluster: str) -> pd.DataFrame:
    settings = PrometheusSettings(
        url=url,
        start=datetime.fromtimestamp(START, UTC),
        end=datetime.fromtimestamp(END, UTC),
        extra_matchers={"cluster": cluster},
        retries=0,
    )
    usage, _ = load_prometheus_history(settings)
    return usage


def test_only_the_real_container_of_a_pod_is_read(server_url: str) -> None:
    usage = load(server_url, "edge")
    assert set(zip(usage["namespace"], usage["pod"], usage["container"], strict=True)) == {
        ("shop", "web-0", "app")
    }
    assert len(usage) == WINDOWS
    np.testing.assert_allclose(usage["cpu"], 0.5, rtol=1e-9)
    assert (usage["memory"] == 100e6).all()


def test_a_container_scraped_by_two_jobs_is_counted_once(server_url: str) -> None:
    usage = load(server_url, "twice")
    assert len(usage) == WINDOWS
    np.testing.assert_allclose(usage["cpu"], 0.25, rtol=1e-9)
    assert (usage["memory"] == 200e6).all()


def test_two_jobs_scraping_apart_collapse_to_the_larger_value_and_the_exact_rate(
    server_url: str,
) -> None:
    """The queries return both series; the reader keeps one container, its peak the larger
    of the two (as `max by` did) and its CPU from the latest sample with that sample's time."""
    usage = load(server_url, "apart")
    assert len(usage) == WINDOWS
    np.testing.assert_allclose(usage["cpu"], 0.25, rtol=1e-9)
    assert (usage["memory"] == 210e6).all()


def test_an_exporter_glitch_drops_its_windows_not_the_load(
    server_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    usage = load(server_url, "glitch")
    rows = usage.groupby("pod").size().to_dict()
    # +Inf in the counter spoils the two windows around it; a bad peak its own window
    assert rows == {
        "clean-0": WINDOWS,
        "inf-cpu-0": WINDOWS - 2,
        "inf-mem-0": WINDOWS - 1,
        "huge-mem-0": WINDOWS - 1,
        "neg-mem-0": WINDOWS - 1,
    }
    np.testing.assert_allclose(usage["cpu"], 0.5, rtol=1e-9)
    assert (usage["memory"] == 100e6).all()
    glitch = pd.Timestamp(START + 3600, unit="s", tz="UTC")
    assert not (usage["timestamp"] == glitch)[usage["pod"] != "clean-0"].any()
    warned = " ".join(record.getMessage() for record in caplog.records)
    assert "skipped 1 cpu value" in warned and "skipped 3 memory value" in warned


def test_windows_crossing_a_restart_are_left_out_even_when_the_counter_grew(
    server_url: str,
) -> None:
    usage = load(server_url, "restarts")
    crash = usage[usage["pod"] == "web-0"]
    crossed = {START + (r - START - 1) // STEP * STEP for r in RESTARTS}  # r in (T, T + STEP]
    expected = [t for t in range(START, END, STEP) if t not in crossed]
    assert crash["timestamp"].astype("int64").floordiv(10**6).tolist() == expected
    np.testing.assert_allclose(crash["cpu"], 1.0, rtol=1e-9)  # was 0.1: 60 - 30 over 300 s
    assert len(usage[usage["pod"] == "steady-0"]) == WINDOWS


@pytest.mark.parametrize("cluster", ["restarts", "apart", "glitch", "twice"])
def test_times_resets_and_lows_from_raw_samples_equal_what_prometheus_evaluates(
    server_url: str, cluster: str
) -> None:
    """The reads `counter_reads` makes of one raw-sample query equal Prometheus's own
    `timestamp(x)`, `resets(x[step])` and `min_over_time(x[step])`, series by series,
    over restarts, two jobs scraping apart and an infinite sample."""
    settings = PrometheusSettings(
        url=server_url, extra_matchers={"cluster": cluster}, retries=0, end=datetime.now(UTC)
    )
    queries = settings.queries()
    first, last = START + STEP, START + 4 * 3600
    client = connect(settings)
    try:
        fetcher = Fetcher(settings, client)
        bare = queries.cpu_counter()
        samples = fetcher.samples(queries.cpu_samples(samples_range(first, last, STEP)), last)
        reads = counter_reads(samples, fetcher.range_matrix(bare, first, last), first, last, STEP)
        evaluated = {
            "at": f"timestamp({bare})",
            "resets": f"resets({bare}[{STEP}s])",
            "low": f"min_over_time({bare}[{STEP}s])",
        }
        for part, query in evaluated.items():
            assert _by_series(reads[part]) == _by_series(fetcher.range_matrix(query, first, last))
        # the floor: the low, unless the window holds a reset
        lows, resets = _by_series(reads["low"]), _by_series(reads["resets"])
        floors = {
            key: [
                (t, -math.inf if r > 0 else low)
                for (t, low), (_, r) in zip(lows[key], points, strict=True)
            ]
            for key, points in resets.items()
        }
        assert _by_series(reads["floor"]) == floors
    finally:
        client.close()


def _by_series(answer: Matrix) -> dict[tuple, list[tuple[int, float]]]:
    """Each series' points, keyed by its labels without the metric name (functions drop it)."""
    found = {}
    for i, labels in enumerate(answer.labels):
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))
        points = slice(answer.offsets[i], answer.offsets[i + 1])
        times, values = answer.times[points].tolist(), answer.values[points].tolist()
        found[key] = list(zip(times, values, strict=True))
    assert found and all(found.values())
    return found
