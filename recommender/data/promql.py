"""PromQL text for the usage-history queries, built without touching the network.

Everything a user controls (label values, namespace names, extra matchers) ends up
inside PromQL string literals, so it goes through `quote` (and `regex_escape` for
regex matchers); label and metric names cannot be quoted, so they are validated
instead. Keeping this module pure lets the escaping be tested without a server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
# Prometheus rejects range queries returning more points than this per series.
MAX_POINTS_PER_SERIES = 11_000

_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_RE2_SPECIAL = set("\\.+*?()|[]{}^$")

MatchOp = Literal["=", "!=", "=~", "!~"]


def validate_label_name(name: str) -> str:
    """Return `name` if Prometheus accepts it as a label name, else raise ValueError."""
    if not LABEL_NAME.fullmatch(name):
        raise ValueError(f"invalid Prometheus label name {name!r}: must match {LABEL_NAME.pattern}")
    return name


def validate_metric_name(name: str) -> str:
    """Return `name` if Prometheus accepts it as a metric name, else raise ValueError."""
    if not METRIC_NAME.fullmatch(name):
        raise ValueError(
            f"invalid Prometheus metric name {name!r}: must match {METRIC_NAME.pattern}"
        )
    return name


#: kube-state-metrics' kube_pod_owner labels the owners query groups on.
OWNER_LABELS = ("owner_kind", "owner_name", "owner_is_controller")
#: Labels the queries match or group on themselves, besides the configured container label.
QUERY_LABELS = ("image", "resource", "reason", *OWNER_LABELS)


def check_extra_matcher(name: str, names: QueryNames) -> str:
    """Return `name` if an extra matcher may use it, else raise ValueError.

    A name Prometheus reserves (`__name__`, ...) fights the metric each query names,
    and a label the queries set themselves (`reason="OOMKilled"`, `resource`, or
    `container`, which owner and eviction series lack) empties or skews some of the
    queries: the load came back empty or wrong instead of refusing the matcher.
    Namespace and pod stay allowed: `HistoryQueries` matches them on each source's
    label holding the pod's namespace and name (`names.labels` for cAdvisor,
    `names.state_labels` for kube-state-metrics), which every queried series carries.
    """
    validate_label_name(name)
    if name.startswith("__"):
        raise ValueError(
            f"label {name!r} is reserved by Prometheus (names starting with __); "
            "the queries choose the metrics themselves"
        )
    reserved = dict.fromkeys((names.labels.container, names.state_labels.container, *QUERY_LABELS))
    if name in reserved:
        raise ValueError(
            f"label {name!r} is set by the history queries themselves and cannot be matched "
            f"on (reserved: {', '.join(reserved)})"
        )
    return name


def quote(value: str) -> str:
    """A PromQL double-quoted string literal holding exactly `value`."""
    return '"' + "".join(_STRING_ESCAPES.get(char, char) for char in value) + '"'


def regex_escape(value: str) -> str:
    """RE2 pattern matching exactly `value` (Prometheus anchors regex matchers itself)."""
    return "".join("\\" + char if char in _RE2_SPECIAL else char for char in value)


def duration(seconds: int) -> str:
    """A PromQL duration for a whole number of seconds."""
    if seconds <= 0:
        raise ValueError(f"duration must be positive, got {seconds} s")
    return f"{int(seconds)}s"


@dataclass(frozen=True)
class Matcher:
    """One label matcher; the value is escaped when rendered, never trusted."""

    label: str
    op: MatchOp
    value: str

    def __post_init__(self) -> None:
        validate_label_name(self.label)
        if self.op not in ("=", "!=", "=~", "!~"):
            raise ValueError(f"unknown matcher operator {self.op!r}")

    def render(self) -> str:
        return f"{self.label}{self.op}{quote(self.value)}"


def one_of(label: str, values: Sequence[str]) -> Matcher:
    """A regex matcher selecting exactly the given literal values."""
    if not values:
        raise ValueError(f"one_of({label!r}) needs at least one value")
    return Matcher(label, "=~", "|".join(regex_escape(value) for value in values))


def selector(metric: str, matchers: Sequence[Matcher]) -> str:
    """`metric{m1,m2,...}` with a validated metric name."""
    validate_metric_name(metric)
    return metric + "{" + ",".join(matcher.render() for matcher in matchers) + "}"


class MetricNames(BaseModel):
    """Metric names of cAdvisor and kube-state-metrics, overridable for renamed setups.

    cAdvisor names init containers' series like app containers', but kube-state-metrics
    exports an init container's state (native sidecars included) under `kube_pod_init_*`
    names: the `init_*` fields, read together with their app-container counterparts.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_usage: str = "container_cpu_usage_seconds_total"
    cpu_throttled: str = "container_cpu_cfs_throttled_seconds_total"
    memory_working_set: str = "container_memory_working_set_bytes"
    memory_stalled: str = "container_pressure_memory_stalled_seconds_total"  # PSI `full`
    requests: str = "kube_pod_container_resource_requests"
    limits: str = "kube_pod_container_resource_limits"
    last_terminated_reason: str = "kube_pod_container_status_last_terminated_reason"
    restarts: str = "kube_pod_container_status_restarts_total"
    init_requests: str = "kube_pod_init_container_resource_requests"
    init_limits: str = "kube_pod_init_container_resource_limits"
    init_last_terminated_reason: str = "kube_pod_init_container_status_last_terminated_reason"
    init_restarts: str = "kube_pod_init_container_status_restarts_total"
    pod_owner: str = "kube_pod_owner"
    pod_status_reason: str = "kube_pod_status_reason"

    @field_validator("*")
    @classmethod
    def _metric_name(cls, value: str) -> str:
        return validate_metric_name(value)


class LabelNames(BaseModel):
    """Names of the labels carrying namespace, pod and container (relabelled setups differ)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str = "namespace"
    pod: str = "pod"
    container: str = "container"

    @field_validator("*")
    @classmethod
    def _label_name(cls, value: str) -> str:
        return validate_label_name(value)


class QueryNames(BaseModel):
    """Every name the history queries use, for setups that renamed some.

    cAdvisor's and kube-state-metrics' labels are separate: a scrape without
    `honor_labels` turns kube-state-metrics' `namespace` and `pod` into
    `exported_namespace` and `exported_pod` while cAdvisor's stay, and clusters
    before Kubernetes 1.16 label cAdvisor's series `pod_name` / `container_name`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    metrics: MetricNames = MetricNames()
    labels: LabelNames = LabelNames()  # cAdvisor: usage, throttling, memory
    state_labels: LabelNames = LabelNames()  # kube-state-metrics: resources, restarts, owners


@dataclass(frozen=True)
class HistoryQueries:
    """The PromQL of every history query, for one configuration.

    Every per-container query is evaluated by query_range on the grid start,
    start+step, ...; window j is [T_j, T_j + step). The queries select series
    without aggregating them: Prometheus 2.x evaluates an aggregation (`max by`) or
    a binary operator step by step, at about 8x the CPU of the bare selector, so a
    container exported twice (two scrape jobs, a new series after a restart) comes
    back as two series and the reader collapses them on its grid (the larger value;
    the smallest for `cpu_low`), as `max by (namespace, pod, container)` would have.
    cAdvisor's series are matched by `names.labels`, kube-state-metrics' by
    `names.state_labels`; both are keyed by the same (namespace, pod, container).
    """

    names: QueryNames
    step: int
    namespaces: tuple[str, ...] = ()
    extra: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def build(
        names: QueryNames,
        step: int,
        namespaces: Sequence[str] = (),
        extra_matchers: Mapping[str, str] | None = None,
    ) -> HistoryQueries:
        extra = tuple(sorted((extra_matchers or {}).items()))
        for name, _ in extra:
            check_extra_matcher(name, names)
        return HistoryQueries(names, int(step), tuple(namespaces), extra)

    @property
    def metrics(self) -> MetricNames:
        return self.names.metrics

    def _base(self, labels: LabelNames) -> list[Matcher]:
        # An extra matcher on `namespace` or `pod` means the pod's: kube-state-metrics
        # scraped without honor_labels holds it in `exported_namespace`, and its
        # `namespace` is the scrape target's, so matching that name dropped its series.
        # Either source's name for them (`--match exported_namespace=shop`) means them too.
        meaning = {"namespace": "namespace", "pod": "pod"}
        for source in (self.names.labels, self.names.state_labels):
            meaning.update({source.namespace: "namespace", source.pod: "pod"})
        own = {"namespace": labels.namespace, "pod": labels.pod}
        matchers = [
            Matcher(own.get(meaning.get(name, ""), name), "=", value) for name, value in self.extra
        ]
        # A series without namespace or pod (a node-level cgroup, a relabelling slip)
        # belongs to no workload; kept, it grouped under "" and failed the whole load.
        if self.namespaces:
            matchers.append(one_of(labels.namespace, self.namespaces))
        matchers.append(Matcher(labels.namespace, "!=", ""))
        matchers.append(Matcher(labels.pod, "!=", ""))
        return matchers

    def _cadvisor(self) -> list[Matcher]:
        # cAdvisor also exports pod-level cgroups (container="") and pause containers.
        labels = self.names.labels
        return [
            *self._base(labels),
            Matcher(labels.container, "!=", ""),
            Matcher(labels.container, "!=", "POD"),
            Matcher("image", "!=", ""),
        ]

    @staticmethod
    def _by(labels: LabelNames, *more: str, per_container: bool = True) -> str:
        keys = [labels.namespace, labels.pod] + ([labels.container] if per_container else [])
        return "max by (" + ", ".join(validate_label_name(name) for name in [*keys, *more]) + ")"

    def _usage(self, metric: str | None = None) -> str:
        return selector(metric or self.metrics.cpu_usage, self._cadvisor())

    def cpu_counter(self, metric: str | None = None) -> str:
        """Raw counter value of the last sample at or before each grid point (of
        `metric`, a CPU-seconds counter; the usage counter by default)."""
        return self._usage(metric)

    def cpu_samples(self, seconds: int, metric: str | None = None) -> str:
        """The counter's raw samples over `seconds`, for an instant query: their times (the
        rate divides by the true interval), resets and lowest values, which tell a window
        crossing a restart (`prometheus_samples`)."""
        return f"{self._usage(metric)}[{duration(seconds)}]"

    def memory_peak(self) -> str:
        """Peak working set of the window ENDING at each grid point.

        `[step] offset 1ms` covers [T-step-1ms, T-1ms] (closed, Prometheus 2) or
        (T-step-1ms, T-1ms] (left-open, Prometheus 3): both are [T-step, T) for
        samples at whole seconds, so a sample on a window boundary counts once.
        """
        inner = selector(self.metrics.memory_working_set, self._cadvisor())
        return f"max_over_time({inner}[{duration(self.step)}] offset 1ms)"

    def memory_stalled_share(self, window: int | None = None) -> str:
        """Share of wall time every task of the container stalled on memory (PSI `full`,
        kubelet 1.34+ on cgroup v2), averaged over the `window` seconds (the step by
        default) ending at each grid point; rate() also spans a restart's new counter."""
        inner = selector(self.metrics.memory_stalled, self._cadvisor())
        return f"rate({inner}[{duration(window or self.step)}])"

    def working_set_peak(self, window: int) -> str:
        """Peak working set over the `window` seconds ending at each grid point."""
        inner = selector(self.metrics.memory_working_set, self._cadvisor())
        return f"max_over_time({inner}[{duration(window)}])"

    def _state(self, metric: str, *more: Matcher) -> str:
        """A kube-state-metrics series, matched by its own labels."""
        return selector(metric, [*self._base(self.names.state_labels), *more])

    def _containers(self, metric: str, init_metric: str, *more: Matcher) -> tuple[str, ...]:
        """A per-container kube-state-metrics query over app and init containers alike.

        kube-state-metrics exports init containers (native sidecars among them) under
        their own metric names; a container name is unique across both lists of a pod,
        so reading both (two queries: `A or B` is a binary operator, evaluated step by
        step) onto one grid never drops nor mixes a series.
        """
        app = self._state(metric, *more)
        if init_metric == metric:  # a setup exporting both under one name
            return (app,)
        return app, self._state(init_metric, *more)

    def _resources(self, metric: str, init_metric: str) -> tuple[str, ...]:
        return self._containers(metric, init_metric, Matcher("resource", "=~", "cpu|memory"))

    def requests(self) -> tuple[str, ...]:
        return self._resources(self.metrics.requests, self.metrics.init_requests)

    def limits(self) -> tuple[str, ...]:
        return self._resources(self.metrics.limits, self.metrics.init_limits)

    def restarts(self) -> tuple[str, ...]:
        return self._containers(self.metrics.restarts, self.metrics.init_restarts)

    def oom_killed(self) -> tuple[str, ...]:
        return self._containers(
            self.metrics.last_terminated_reason,
            self.metrics.init_last_terminated_reason,
            Matcher("reason", "=", "OOMKilled"),
        )

    def evicted(self) -> str:
        return self._state(self.metrics.pod_status_reason, Matcher("reason", "=", "Evicted"))

    def owners(self, over: int = 0) -> str:
        """Every owner of each pod, with whether it is the pod's controller (the owner
        its workload is named after, as `tailor.workloads.pod_workload` does); with
        `over`, every owner seen in the `over` seconds up to the evaluation time (one
        point per owner, where reading it on every grid point sent thousands). Grouped
        by Prometheus: evaluated at one instant, the aggregation costs little."""
        labels = self.names.state_labels
        by = self._by(labels, *OWNER_LABELS, per_container=False)
        if not over:
            return f"{by} ({self._state(self.metrics.pod_owner)})"
        inner = selector(self.metrics.pod_owner, self._base(labels))
        return f"{by} (max_over_time({inner}[{duration(over)}]))"


def plan_chunks(start: int, end: int, step: int, chunk: int) -> list[tuple[int, int]]:
    """Split the grid points start, start+step, ..., end into disjoint inclusive runs.

    Each run (first, last) is one query_range call of at most chunk/step points,
    so no grid point is fetched twice or skipped at a chunk boundary.
    """
    if step <= 0 or chunk < step:
        raise ValueError(f"need 0 < step <= chunk, got step={step} chunk={chunk}")
    if (end - start) % step or end < start:
        raise ValueError(f"range [{start}, {end}] is not a whole number of {step} s steps")
    points_per_chunk = chunk // step
    if points_per_chunk > MAX_POINTS_PER_SERIES:
        raise ValueError(
            f"chunk of {points_per_chunk} points exceeds Prometheus's {MAX_POINTS_PER_SERIES}"
        )
    runs = []
    first = start
    while first <= end:
        last = min(first + (points_per_chunk - 1) * step, end)
        runs.append((first, last))
        first = last + step
    return runs
