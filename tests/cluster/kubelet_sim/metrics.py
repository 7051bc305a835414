"""The simulator's usage as cAdvisor and kube-state-metrics would expose it.

Served over HTTP on 127.0.0.1 for a real Prometheus to scrape, or written as
OpenMetrics text with timestamps for `promtool tsdb create-blocks-from
openmetrics` (backfilled history). Metric and label names are the ones a
real cluster has, so the recommender's Prometheus source (see
`recommender.data.promql`) runs unchanged: cAdvisor series carry `image` and
`name` because the source drops series without an image (pod cgroups, pause).
History text comes from the product's own writer, never a second encoding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from recommender.data.openmetrics import usage_to_openmetrics
from tests.cluster.kubelet_sim.quantities import Resources
from tests.cluster.kubelet_sim.usage import UsageSeries

_CONTAINER_LABELS = ("namespace", "pod", "container", "image", "name")
_KSM_LABELS = ("namespace", "pod", "uid", "container", "node", "resource", "unit")
# kube-state-metrics' help texts of its per-container families, app and init containers:
# (whose resources, restarts, last terminated reason)
_STATE_HELP = {
    "container": (
        "a container",
        "The number of container restarts per container.",
        "Describes the last reason the container was in terminated state.",
    ),
    "init_container": (
        "an init container",
        "The number of restarts for the init container.",
        "Describes the last reason the init container was in terminated state.",
    ),
}
# kube-state-metrics' kube_pod_status_reason reasons (one 0/1 series each per pod).
POD_STATUS_REASONS = ("Evicted", "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError")


@dataclass(frozen=True)
class ContainerSample:
    """One container's current numbers; an evicted pod's containers are no longer
    running (no cAdvisor series) but kube-state-metrics still shows the pod.

    `init` marks an init container (a native sidecar: `restartPolicy: Always`):
    cAdvisor names its series like an app container's, kube-state-metrics exports
    its requests, limits, restarts and last termination under `kube_pod_init_container_*`.
    """

    namespace: str
    pod: str
    uid: str
    container: str
    node: str
    cpu_seconds: float
    memory_bytes: int
    requests: Resources | None
    limits: Resources | None
    restart_count: int
    last_terminated_reason: str | None
    image: str
    container_id: str  # cAdvisor's `name` under containerd: a new one per restart
    owner_kind: str = ""
    owner_name: str = ""
    evicted: bool = False
    throttled_seconds: float = 0.0
    init: bool = False
    memory_waiting_seconds: float = 0.0
    memory_stalled_seconds: float = 0.0


def _resource_samples(
    family: GaugeMetricFamily, sample: ContainerSample, amounts: Resources | None
) -> None:
    if amounts is None:
        return
    base = [sample.namespace, sample.pod, sample.uid, sample.container, sample.node]
    if amounts.cpu:
        family.add_metric([*base, "cpu", "core"], amounts.cpu / 1000)
    if amounts.memory:
        family.add_metric([*base, "memory", "byte"], amounts.memory)


@dataclass(frozen=True)
class _StateFamilies:
    """kube-state-metrics' per-container families, of app or of init containers."""

    requests: GaugeMetricFamily
    limits: GaugeMetricFamily
    restarts: CounterMetricFamily
    terminated: GaugeMetricFamily

    @classmethod
    def named(cls, kind: str) -> _StateFamilies:
        """`kind` is "container" or "init_container", as in kube-state-metrics' names."""
        whom, restarts_help, terminated_help = _STATE_HELP[kind]
        return cls(
            GaugeMetricFamily(
                f"kube_pod_{kind}_resource_requests",
                f"The number of requested request resource by {whom}.",
                labels=_KSM_LABELS,
            ),
            GaugeMetricFamily(
                f"kube_pod_{kind}_resource_limits",
                f"The number of requested limit resource by {whom}.",
                labels=_KSM_LABELS,
            ),
            CounterMetricFamily(
                f"kube_pod_{kind}_status_restarts",
                restarts_help,
                labels=("namespace", "pod", "uid", "container"),
            ),
            GaugeMetricFamily(
                f"kube_pod_{kind}_status_last_terminated_reason",
                terminated_help,
                labels=("namespace", "pod", "uid", "container", "reason"),
            ),
        )

    def add(self, sample: ContainerSample) -> None:
        _resource_samples(self.requests, sample, sample.requests)
        _resource_samples(self.limits, sample, sample.limits)
        ids = [sample.namespace, sample.pod, sample.uid, sample.container]
        self.restarts.add_metric(ids, sample.restart_count)
        if sample.last_terminated_reason:
            self.terminated.add_metric([*ids, sample.last_terminated_reason], 1)

    def families(self) -> tuple[Metric, ...]:
        return (self.requests, self.limits, self.restarts, self.terminated)


class SimulatorCollector(Collector):
    """Builds the metric families from a snapshot function at each scrape."""

    def __init__(self, snapshot: Callable[[], Sequence[ContainerSample]]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        samples = self._snapshot()
        cpu = CounterMetricFamily(
            "container_cpu_usage_seconds",
            "Cumulative cpu time consumed in seconds.",
            labels=_CONTAINER_LABELS,
        )
        throttled = CounterMetricFamily(
            "container_cpu_cfs_throttled_seconds",
            "Total time duration the container has been throttled.",
            labels=_CONTAINER_LABELS,
        )
        # cAdvisor's PSI counters (kubelet 1.34+, cgroup v2), `some` and `full` memory stalls
        waiting = CounterMetricFamily(
            "container_pressure_memory_waiting_seconds",
            "Total time duration tasks in the container have waited due to memory pressure.",
            labels=_CONTAINER_LABELS,
        )
        stalled = CounterMetricFamily(
            "container_pressure_memory_stalled_seconds",
            "Total time duration no tasks in the container could make progress due to "
            "memory pressure.",
            labels=_CONTAINER_LABELS,
        )
        memory = GaugeMetricFamily(
            "container_memory_working_set_bytes",
            "Current working set in bytes.",
            labels=_CONTAINER_LABELS,
        )
        app_state = _StateFamilies.named("container")
        init_state = _StateFamilies.named("init_container")
        owners = GaugeMetricFamily(
            "kube_pod_owner",
            "Information about the Pod's owner.",
            labels=("namespace", "pod", "uid", "owner_kind", "owner_name", "owner_is_controller"),
        )
        reasons = GaugeMetricFamily(
            "kube_pod_status_reason",
            "The pod status reasons",
            labels=("namespace", "pod", "uid", "reason"),
        )
        seen_pods: set[str] = set()
        for sample in samples:
            if not sample.evicted:
                names = [
                    sample.namespace,
                    sample.pod,
                    sample.container,
                    sample.image,
                    sample.container_id,
                ]
                cpu.add_metric(names, sample.cpu_seconds)
                if sample.limits is not None and sample.limits.cpu:  # as cAdvisor: only
                    throttled.add_metric(names, sample.throttled_seconds)  # under a quota
                memory.add_metric(names, sample.memory_bytes)
                waiting.add_metric(names, sample.memory_waiting_seconds)
                stalled.add_metric(names, sample.memory_stalled_seconds)
            (init_state if sample.init else app_state).add(sample)
            if sample.uid not in seen_pods:
                seen_pods.add(sample.uid)
                kind = sample.owner_kind or "<none>"
                name = sample.owner_name or "<none>"
                is_controller = "true" if sample.owner_kind else "<none>"
                pod = [sample.namespace, sample.pod, sample.uid]
                owners.add_metric([*pod, kind, name, is_controller], 1)
                for reason in POD_STATUS_REASONS:
                    shown = sample.evicted and reason == "Evicted"
                    reasons.add_metric([*pod, reason], 1 if shown else 0)
        yield from (cpu, throttled, memory, waiting, stalled)
        yield from (*app_state.families(), *init_state.families())
        yield from (owners, reasons)


class MetricsServer:
    """prometheus_client's HTTP server on 127.0.0.1 with a private registry."""

    def __init__(self, collector: Collector, port: int = 0) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._server, self._thread = start_http_server(
            port, addr="127.0.0.1", registry=self.registry
        )
        self.port = int(self._server.server_port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@dataclass(frozen=True)
class ContainerHistory:
    """A container's usage over a past window, for backfilling Prometheus.

    `workload` (optional) is written as the pod's owner, so a reader groups the
    pod under it; without one the pod is its own workload.
    """

    namespace: str
    pod: str
    container: str
    series: UsageSeries
    requests: Resources | None = None
    limits: Resources | None = None
    workload: str = ""


def _cumulative_cpu(series: UsageSeries, elapsed: np.ndarray) -> np.ndarray:
    """Core-seconds used from the container's start to each `elapsed` (exact for steps)."""
    cores = np.asarray(series.cpu_cores, dtype=np.float64)
    step = series.step_seconds
    before = np.concatenate([[0.0], np.cumsum(cores) * step])  # at the start of each step
    laps = np.zeros_like(elapsed)
    if series.repeat:
        laps, elapsed = np.divmod(elapsed, cores.size * step)
    index = np.minimum(np.floor(elapsed / step).astype(np.int64), cores.size - 1)
    return laps * before[-1] + before[index] + cores[index] * (elapsed - index * step)


def _peak_memory(series: UsageSeries, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Largest working set of any step overlapping [begin, end) (elapsed seconds)."""
    memory = np.asarray(series.memory_bytes, dtype=np.int64)
    step = series.step_seconds
    first = np.floor(begin / step).astype(np.int64)
    last = np.ceil(end / step).astype(np.int64) - 1
    # n consecutive steps already hold every value (repeat) or reach the last one.
    width = int(min(np.max(last - first) + 1, memory.size))
    index = first[:, None] + np.arange(width)
    mapped = index % memory.size if series.repeat else np.minimum(index, memory.size - 1)
    values = np.where(index <= last[:, None], memory[mapped], -1)
    return np.asarray(values.max(axis=1))


def history_frame(
    histories: Iterable[ContainerHistory], *, start: float, end: float, interval: int
) -> pd.DataFrame:
    """Canonical usage rows: one per container and whole window [t, t + interval) in
    [start, end), cpu the window's exact average, memory its peak."""
    begins = np.arange(math.floor((end - start) / interval)) * float(interval)
    if begins.size == 0:
        raise ValueError(f"no whole {interval} s window between {start} and {end}")
    stamps = pd.to_datetime(start + begins, unit="s", utc=True)
    frames = []
    histories = list(histories)
    if not histories:
        raise ValueError("no container histories to write")
    named = any(history.workload for history in histories)
    for history in histories:
        used = _cumulative_cpu(history.series, np.append(begins, begins[-1] + interval))
        columns: dict[str, object] = {
            "timestamp": stamps,
            "namespace": history.namespace,
            "pod": history.pod,
            "container": history.container,
            "cpu": np.diff(used) / interval,
            "memory": _peak_memory(history.series, begins, begins + interval).astype(np.float64),
        }
        if named:
            columns["workload"] = history.workload or history.pod
        for kind, amounts in (("request", history.requests), ("limit", history.limits)):
            cpu = amounts.cpu / 1000 if amounts is not None and amounts.cpu else math.nan
            memory = amounts.memory if amounts is not None and amounts.memory else math.nan
            columns[f"cpu_{kind}"] = cpu
            columns[f"memory_{kind}"] = float(memory)
        frames.append(pd.DataFrame(columns))
    return pd.concat(frames, ignore_index=True)


def write_openmetrics_history(
    out: Path | TextIO,
    histories: Iterable[ContainerHistory],
    *,
    start: float,
    end: float,
    scrape_interval: float = 30.0,
) -> int:
    """Write the histories as timestamped OpenMetrics text (ending with # EOF).

    Every container starts at `start`; windows of `scrape_interval` (whole
    seconds) up to `end` (UNIX seconds) are written by the product's
    `usage_to_openmetrics`, so backfilled and live-read history share one
    encoding. Returns the number of samples written.
    """
    if scrape_interval <= 0 or not float(scrape_interval).is_integer():
        raise ValueError(f"scrape_interval must be a whole number of seconds: {scrape_interval}")
    interval = int(scrape_interval)
    frame = history_frame(histories, start=start, end=end, interval=interval)
    text = usage_to_openmetrics(frame, step=interval)
    if isinstance(out, Path):
        out.write_text(text)
    else:
        out.write(text)
    return sum(1 for line in text.splitlines() if not line.startswith("#"))
