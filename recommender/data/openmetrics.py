"""Canonical usage and events as OpenMetrics text, with the metric names of a real cluster.

`promtool tsdb create-blocks-from openmetrics` turns this text into Prometheus
blocks, so a test (or the kubelet simulator) can give a real Prometheus server the
history a cluster with cAdvisor and kube-state-metrics would have recorded.

Encoding, per container series (step = the sample period):
- `container_cpu_usage_seconds_total`: a counter sampled at each window's END,
  cumulating cpu x step; a window following a gap starts with a counter sample at
  its START. If the counter was non-zero it restarts from 0 there (a new container
  instance, as cAdvisor shows after a restart), so a reader never mistakes the gap
  for an idle window.
- `container_cpu_cfs_throttled_seconds_total` (only with a `cpu_throttled` column):
  the same counter of the CPU-seconds throttling held back.
- `container_memory_working_set_bytes`: the window's peak, sampled at its start.
- kube-state-metrics gauges (requests, limits, restarts, last terminated reason,
  owner) are sampled at each window's start, as a scrape at that instant would see.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pa_compute

from recommender.data.arrays import infer_step
from recommender.data.promql import LabelNames, QueryNames, validate_label_name
from recommender.data.schema import THROTTLED_COLUMN

# kube-controller-manager's safe-encoding alphabet for pod-template-hash suffixes.
TEMPLATE_HASH_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# MetricNames field -> the usage columns it carries (column, resource, unit)
RESOURCE_COLUMNS = {
    "requests": (("cpu_request", "cpu", "core"), ("memory_request", "memory", "byte")),
    "limits": (("cpu_limit", "cpu", "core"), ("memory_limit", "memory", "byte")),
}
SERIES_KEYS = ["namespace", "pod", "container"]


def escape_label_value(value: str) -> str:
    """OpenMetrics label value escaping: backslash, double quote and newline."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_labels(labels: Mapping[str, str]) -> str:
    parts = [f'{validate_label_name(k)}="{escape_label_value(v)}"' for k, v in labels.items()]
    return "{" + ",".join(parts) + "}"


def format_value(value: float) -> str:
    """Shortest text that parses back to the same float64 (integers stay integers)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def format_timestamp(seconds: float) -> str:
    if float(seconds).is_integer():
        return str(int(seconds))
    return f"{seconds:.3f}"


def replicaset_name(workload: str) -> str:
    """A stable `<deployment>-<pod-template-hash>` name, as a Deployment's ReplicaSet has."""
    digest = hashlib.sha256(workload.encode()).digest()
    return workload + "-" + "".join(TEMPLATE_HASH_ALPHABET[b % 27] for b in digest[:10])


def _seconds(timestamps: pd.Series) -> np.ndarray:
    return timestamps.astype("datetime64[ms, UTC]").astype("int64").to_numpy() / 1000.0


class _Family:
    """Collects the samples of one metric family; families are written whole, never interleaved."""

    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name = name
        self.kind = kind
        self.help_text = help_text
        self.lines: list[str] = []

    @classmethod
    def counter(cls, sample_name: str, help_text: str) -> _Family:
        """A counter family for samples named `sample_name`: OpenMetrics names a counter's
        family without the `_total` its samples carry; a renamed counter without one is
        written untyped."""
        if sample_name.endswith("_total"):
            return cls(sample_name.removesuffix("_total"), "counter", help_text)
        return cls(sample_name, "unknown", help_text)

    def add(
        self, sample_name: str, labels: str, values: Iterable[float], times: Iterable[float]
    ) -> None:
        numbers = np.asarray(values, dtype=np.float64)
        stamps = np.asarray(times, dtype=np.float64)
        if numbers.size != stamps.size:
            raise ValueError(f"{numbers.size} values for {stamps.size} timestamps")
        if numbers.size:
            self.lines.append(_sample_lines(sample_name + labels, numbers, stamps))

    def render(self) -> Iterator[str]:
        if not self.lines:
            return
        yield f"# HELP {self.name} {self.help_text}"
        yield f"# TYPE {self.name} {self.kind}"
        yield from self.lines


def _sample_lines(prefix: str, values: np.ndarray, times: np.ndarray) -> str:
    """`prefix value timestamp` lines (no final newline), as `format_value` and
    `format_timestamp` spell them. Arrow's float-to-text cast writes the same shortest
    round-trip text as repr() for finite values, integers without a decimal point,
    in C: a Python call per sample made backfilling 10,000 containers take hours."""
    whole = np.all(times == np.floor(times)) and np.all(np.abs(times) < 2**53)
    if not (np.isfinite(values).all() and whole):  # rare: NaN/Inf, sub-second stamps
        return "\n".join(
            f"{prefix} {format_value(float(v))} {format_timestamp(float(t))}"
            for v, t in zip(values, times, strict=True)
        )
    text = pa_compute.binary_join_element_wise(
        pa.scalar(prefix),
        pa_compute.cast(pa.array(values), pa.string()),
        pa_compute.cast(pa.array(times.astype(np.int64)), pa.string()),
        " ",
    )
    one_list = pa.ListArray.from_arrays(pa.array([0, len(text)], pa.int32()), text)
    return str(pa_compute.binary_join(one_list, "\n")[0].as_py())


def _counter_samples(
    times: np.ndarray, cpu: np.ndarray, step: float
) -> tuple[np.ndarray, np.ndarray]:
    """Counter (values, timestamps) for one container's sorted windows; NaN cpu = gap.

    Each run of consecutive windows starts a counter at 0 at its first window's start
    (a new container instance, as cAdvisor shows after a restart) and adds cpu x step
    per window, in order (np.cumsum adds one after another, as a running total does).
    """
    measured = ~np.isnan(cpu)
    starts, cores = times[measured], cpu[measured]
    if starts.size == 0:
        return np.zeros(0), np.zeros(0)
    breaks = np.flatnonzero(starts[1:] != starts[:-1] + step) + 1
    values, stamps = [], []
    for run_starts, run_cores in zip(
        np.split(starts, breaks), np.split(cores, breaks), strict=True
    ):
        values += [np.zeros(1), np.cumsum(run_cores * step)]
        stamps += [run_starts[:1], run_starts + step]
    return np.concatenate(values), np.concatenate(stamps)


Key = tuple[str, str, str]  # namespace, pod, container


class _ContainerFamilies:
    """The per-container metric families (cAdvisor's and kube-state-metrics'), filled one
    series at a time."""

    def __init__(
        self,
        names: QueryNames,
        extra: dict[str, str],
        period: float,
        oom_times: dict[Key, np.ndarray],
    ) -> None:
        metric = self.metric = names.metrics
        self.names, self.extra, self.period, self.oom_times = names, extra, period, oom_times
        self.cpu = _Family.counter(metric.cpu_usage, "Cumulative cpu time consumed")
        self.throttled = _Family.counter(
            metric.cpu_throttled, "Total time duration the container has been throttled"
        )
        self.memory = _Family(metric.memory_working_set, "gauge", "Current working set")
        self.resources = {
            field: _Family(
                getattr(metric, field), "gauge", "Resources of a container (kube-state-metrics)"
            )
            for field in RESOURCE_COLUMNS
        }
        self.restarts = _Family.counter(metric.restarts, "Container restarts")
        self.reasons = _Family(metric.last_terminated_reason, "gauge", "Last termination reason")

    def families(self) -> list[_Family]:
        fixed = [self.cpu, self.throttled, self.memory]
        return [*fixed, *self.resources.values(), self.restarts, self.reasons]

    def add(self, key: Key, rows: pd.DataFrame) -> None:
        """One container's series: its cAdvisor samples, then its kube-state-metrics ones."""
        times = _seconds(rows["timestamp"])
        self._add_cadvisor(key, rows, times)
        self._add_state(key, rows, times)

    def _add_cadvisor(
        self, key: tuple[str, str, str], rows: pd.DataFrame, times: np.ndarray
    ) -> None:
        namespace, pod, container = key
        metric = self.metric
        cadvisor = format_labels(
            {
                **self.extra,
                "image": f"registry.local/{container}:history",
                "name": f"k8s_{container}_{pod}_{namespace}_0",
                **_ids(
                    self.names.labels, *key
                ),  # last: a setup may name its container label "name"
            }
        )
        counter_values, counter_times = _counter_samples(
            times, rows["cpu"].to_numpy(dtype=np.float64), self.period
        )
        self.cpu.add(metric.cpu_usage, cadvisor, counter_values, counter_times)
        if THROTTLED_COLUMN in rows and rows[THROTTLED_COLUMN].notna().any():
            # cAdvisor exports it for containers with a CPU limit: 0 where not throttled
            held_back = np.nan_to_num(rows[THROTTLED_COLUMN].to_numpy(dtype=np.float64))
            held_back[np.isnan(rows["cpu"].to_numpy(dtype=np.float64))] = np.nan
            held, stamps = _counter_samples(times, held_back, self.period)
            self.throttled.add(metric.cpu_throttled, cadvisor, held, stamps)
        mem = rows["memory"].to_numpy(dtype=np.float64)
        has_memory = ~np.isnan(mem)
        self.memory.add(self.memory.name, cadvisor, mem[has_memory], times[has_memory])

    def _add_state(self, key: Key, rows: pd.DataFrame, times: np.ndarray) -> None:
        extra, state_ids = self.extra, _ids(self.names.state_labels, *key)
        for field, columns in RESOURCE_COLUMNS.items():
            for column, resource, unit in columns:
                if column not in rows:
                    continue
                values = rows[column].to_numpy(dtype=np.float64)
                known = ~np.isnan(values)
                labels = format_labels({**extra, **state_ids, "resource": resource, "unit": unit})
                family = self.resources[field]
                family.add(family.name, labels, values[known], times[known])
        ksm = format_labels({**extra, **state_ids})
        kills = np.sort(self.oom_times.get(key, np.array([])))
        counts = np.searchsorted(kills, times, side="right")
        self.restarts.add(self.metric.restarts, ksm, counts, times)
        if kills.size:
            after = times >= kills[0]
            oom = format_labels({**extra, **state_ids, "reason": "OOMKilled"})
            self.reasons.add(self.reasons.name, oom, np.ones(int(after.sum())), times[after])


def usage_to_openmetrics(
    usage: pd.DataFrame,
    events: pd.DataFrame | None = None,
    *,
    step: int | None = None,
    extra_labels: Mapping[str, str] | None = None,
    names: QueryNames | None = None,
) -> str:
    """OpenMetrics text (ending in `# EOF`) for a canonical usage frame and its events.

    `step` is the sample period in seconds (inferred from the timestamps if None).
    `extra_labels` (e.g. {"cluster": "prod"}) are added to every sample. Only
    OOMKilled and Evicted events are encoded, the way kube-state-metrics shows them.
    `names` writes the history under renamed metrics and labels, as a relabelled
    cluster would have recorded it (the readers' `QueryNames`).
    """
    if usage.empty:
        raise ValueError("usage history is empty: nothing to write")
    names = names or QueryNames()
    extra = dict(extra_labels or {})
    for name in extra:
        validate_label_name(name)
    usage = usage.sort_values([*SERIES_KEYS, "timestamp"], kind="stable")
    seconds_all = _seconds(usage["timestamp"])
    period = float(step if step is not None else infer_step(seconds_all.astype(np.int64)))
    events = events if events is not None else _empty_events()
    containers = _ContainerFamilies(names, extra, period, _events_by_container(events, "OOMKilled"))
    for (namespace, pod, container), rows in usage.groupby(SERIES_KEYS, sort=False):
        containers.add((str(namespace), str(pod), str(container)), rows)
    families = containers.families()
    families.append(_pod_status_reasons(usage, events, extra, names))
    if "workload" in usage:
        families.append(_pod_owners(usage, extra, names))
    lines = [line for family in families for line in family.render()]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _ids(labels: LabelNames, namespace: str, pod: str, container: str | None = None) -> dict:
    """A series' identifying labels under the names a scrape gave them."""
    ids = {labels.namespace: namespace, labels.pod: pod}
    if container is not None:
        ids[labels.container] = container
    return ids


def _empty_events() -> pd.DataFrame:
    return pd.DataFrame(
        {column: [] for column in ["timestamp", *SERIES_KEYS, "reason", "memory"]}
    ).astype({"timestamp": "datetime64[ns, UTC]"})


def _events_by_container(events: pd.DataFrame, reason: str) -> dict[tuple, np.ndarray]:
    chosen = events[events["reason"] == reason]
    if chosen.empty:
        return {}
    stamps = _seconds(chosen["timestamp"])
    keys = chosen[SERIES_KEYS].astype(str).itertuples(index=False, name=None)
    grouped: dict[tuple, list[float]] = {}
    for key, stamp in zip(keys, stamps, strict=True):
        grouped.setdefault(key, []).append(float(stamp))
    return {key: np.array(values) for key, values in grouped.items()}


def _pod_times(usage: pd.DataFrame) -> Iterator[tuple[tuple[str, str], pd.DataFrame, np.ndarray]]:
    for (namespace, pod), rows in usage.groupby(["namespace", "pod"], sort=False):
        yield (str(namespace), str(pod)), rows, np.unique(_seconds(rows["timestamp"]))


def _pod_status_reasons(
    usage: pd.DataFrame, events: pd.DataFrame, extra: dict, names: QueryNames
) -> _Family:
    """`kube_pod_status_reason{reason="Evicted"}` = 1 from a pod's eviction on."""
    name = names.metrics.pod_status_reason
    family = _Family(name, "gauge", "Reason the pod is in its current state")
    evicted = events[events["reason"] == "Evicted"]
    if evicted.empty:
        return family
    evicted_at: dict[tuple[str, str], float] = {}
    pods = zip(evicted["namespace"], evicted["pod"], _seconds(evicted["timestamp"]), strict=True)
    for namespace, pod, at in pods:
        key = (str(namespace), str(pod))
        evicted_at[key] = min(evicted_at.get(key, math.inf), float(at))
    for (namespace, pod), _, times in _pod_times(usage):
        at = evicted_at.get((namespace, pod))
        if at is None:
            continue
        # The pod's last scrapes happen at its eviction and one step later.
        stamps = np.unique(np.concatenate([times[times >= at], [at]]))
        ids = _ids(names.state_labels, namespace, pod)
        labels = format_labels({**extra, **ids, "reason": "Evicted"})
        family.add(family.name, labels, np.ones(stamps.size), stamps)
    return family


def _pod_owners(usage: pd.DataFrame, extra: dict, names: QueryNames) -> _Family:
    """`kube_pod_owner` naming a ReplicaSet `<workload>-<hash>`, as a Deployment's pods have."""
    family = _Family(names.metrics.pod_owner, "gauge", "Information about the pod's owner")
    for (namespace, pod), rows, times in _pod_times(usage):
        labels = {
            **extra,
            **_ids(names.state_labels, namespace, pod),
            "owner_kind": "ReplicaSet",
            "owner_name": replicaset_name(str(rows["workload"].iloc[0])),
            "owner_is_controller": "true",
        }
        family.add(family.name, format_labels(labels), np.ones(times.size), times)
    return family
