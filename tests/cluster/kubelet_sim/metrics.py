"""The simulator's usage as cAdvisor and kube-state-metrics would expose it.

Served over HTTP on 127.0.0.1 for a real Prometheus to scrape, or written as
OpenMetrics text with timestamps for `promtool tsdb create-blocks-from
openmetrics` (backfilled history). Metric and label names are the ones a
real cluster has, so the live recommender's queries run unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tests.cluster.kubelet_sim.quantities import Resources
from tests.cluster.kubelet_sim.usage import UsageSeries

_CONTAINER_LABELS = ("namespace", "pod", "container")
_KSM_LABELS = ("namespace", "pod", "uid", "container", "node", "resource", "unit")


@dataclass(frozen=True)
class ContainerSample:
    """One running container's current numbers."""

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
    owner_kind: str = ""
    owner_name: str = ""


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
        memory = GaugeMetricFamily(
            "container_memory_working_set_bytes",
            "Current working set in bytes.",
            labels=_CONTAINER_LABELS,
        )
        requests = GaugeMetricFamily(
            "kube_pod_container_resource_requests",
            "The number of requested request resource by a container.",
            labels=_KSM_LABELS,
        )
        limits = GaugeMetricFamily(
            "kube_pod_container_resource_limits",
            "The number of requested limit resource by a container.",
            labels=_KSM_LABELS,
        )
        restarts = CounterMetricFamily(
            "kube_pod_container_status_restarts",
            "The number of container restarts per container.",
            labels=("namespace", "pod", "uid", "container"),
        )
        terminated = GaugeMetricFamily(
            "kube_pod_container_status_last_terminated_reason",
            "Describes the last reason the container was in terminated state.",
            labels=("namespace", "pod", "uid", "container", "reason"),
        )
        owners = GaugeMetricFamily(
            "kube_pod_owner",
            "Information about the Pod's owner.",
            labels=("namespace", "pod", "uid", "owner_kind", "owner_name", "owner_is_controller"),
        )
        seen_pods: set[str] = set()
        for sample in samples:
            names = [sample.namespace, sample.pod, sample.container]
            cpu.add_metric(names, sample.cpu_seconds)
            memory.add_metric(names, sample.memory_bytes)
            _resource_samples(requests, sample, sample.requests)
            _resource_samples(limits, sample, sample.limits)
            ids = [sample.namespace, sample.pod, sample.uid, sample.container]
            restarts.add_metric(ids, sample.restart_count)
            if sample.last_terminated_reason:
                terminated.add_metric([*ids, sample.last_terminated_reason], 1)
            if sample.uid not in seen_pods:
                seen_pods.add(sample.uid)
                kind = sample.owner_kind or "<none>"
                name = sample.owner_name or "<none>"
                is_controller = "true" if sample.owner_kind else "<none>"
                owners.add_metric(
                    [sample.namespace, sample.pod, sample.uid, kind, name, is_controller], 1
                )
        yield from (cpu, memory, requests, limits, restarts, terminated, owners)


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
    """A container's usage over a past window, for backfilling Prometheus."""

    namespace: str
    pod: str
    container: str
    series: UsageSeries
    requests: Resources | None = None
    limits: Resources | None = None
    node: str = ""
    uid: str = ""


def _label_text(labels: dict[str, str]) -> str:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return ",".join(f'{key}="{escape(value)}"' for key, value in labels.items())


def _number(value: float) -> str:
    """Exact text for a sample value (no exponent rounding of byte counts)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _times(start: float, end: float, interval: float) -> list[float]:
    count = math.floor((end - start) / interval) + 1
    return [start + i * interval for i in range(max(count, 0))]


def write_openmetrics_history(
    out: Path | TextIO,
    histories: Iterable[ContainerHistory],
    *,
    start: float,
    end: float,
    scrape_interval: float = 30.0,
) -> int:
    """Write the histories as timestamped OpenMetrics text (ending with # EOF).

    Every container starts at `start`; samples every `scrape_interval` up to
    `end` (UNIX seconds). CPU is integrated into a counter. Returns the number
    of samples written.
    """
    histories = list(histories)
    times = _times(start, end, scrape_interval)
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")

    family("container_cpu_usage_seconds", "counter", "Cumulative cpu time consumed in seconds.")
    for history in histories:
        labels = _label_text(
            {"namespace": history.namespace, "pod": history.pod, "container": history.container}
        )
        total = 0.0
        previous = start
        for stamp in times:
            cores, _ = history.series.at(previous - start)
            total += cores * (stamp - previous)
            previous = stamp
            lines.append(f"container_cpu_usage_seconds_total{{{labels}}} {total:.6f} {stamp:.3f}")
    family("container_memory_working_set_bytes", "gauge", "Current working set in bytes.")
    for history in histories:
        labels = _label_text(
            {"namespace": history.namespace, "pod": history.pod, "container": history.container}
        )
        for stamp in times:
            _, memory = history.series.at(stamp - start)
            lines.append(f"container_memory_working_set_bytes{{{labels}}} {memory} {stamp:.3f}")
    for kind, attribute in (("requests", "requests"), ("limits", "limits")):
        name = f"kube_pod_container_resource_{kind}"
        family(name, "gauge", f"The number of requested {kind[:-1]} resource by a container.")
        for history in histories:
            amounts: Resources | None = getattr(history, attribute)
            if amounts is None:
                continue
            for resource, unit, value in (
                ("cpu", "core", amounts.cpu / 1000),
                ("memory", "byte", float(amounts.memory)),
            ):
                if not value:
                    continue
                labels = _label_text(
                    {
                        "namespace": history.namespace,
                        "pod": history.pod,
                        "uid": history.uid,
                        "container": history.container,
                        "node": history.node,
                        "resource": resource,
                        "unit": unit,
                    }
                )
                lines.extend(f"{name}{{{labels}}} {_number(value)} {stamp:.3f}" for stamp in times)
    lines.append("# EOF")
    text = "\n".join(lines) + "\n"
    if isinstance(out, Path):
        out.write_text(text)
    else:
        out.write(text)
    return sum(1 for line in lines if not line.startswith("#"))
