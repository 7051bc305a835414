"""The simulator's live exposition carries every metric and label the product's
Prometheus source queries, so a scrape of it is read like a real cluster's.

The source's own matchers (recommender.data.promql) are evaluated on the scraped
samples: a renamed metric or a label the source filters on (cAdvisor's `image`)
would make the live recommender silently see nothing, so it fails here first.
"""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from recommender.data.promql import HistoryQueries, LabelNames, Matcher, MetricNames, QueryNames
from tests.cluster.kubelet_sim.metrics import ContainerSample, SimulatorCollector
from tests.cluster.kubelet_sim.quantities import Resources

Mi = 2**20
Sample = tuple[str, dict[str, str], float]


def container(pod: str, name: str, **changes: object) -> ContainerSample:
    fields: dict[str, object] = {
        "namespace": "shop",
        "pod": pod,
        "uid": f"uid-{pod}",
        "container": name,
        "node": "node-1",
        "cpu_seconds": 12.5,
        "memory_bytes": 200 * Mi,
        "requests": Resources(250, 128 * Mi),
        "limits": Resources(0, 256 * Mi),
        "restart_count": 0,
        "last_terminated_reason": None,
        "image": f"registry.local/{name}:1",
        "container_id": f"{pod}-{name}-0",
        **changes,
    }
    return ContainerSample(**fields)  # type: ignore[arg-type]


SNAPSHOT = [
    # only a container under a CPU limit has a throttling counter, as with cAdvisor
    container("web", "app", limits=Resources(500, 256 * Mi), throttled_seconds=3.5),
    container("leaky", "worker", restart_count=2, last_terminated_reason="OOMKilled"),
    container("batch", "job", evicted=True),
    # a native sidecar beside web's app, OOM-killed once: kube-state-metrics' init_ names
    container(
        "web",
        "proxy",
        init=True,
        requests=Resources(100, 64 * Mi),
        limits=Resources(0, 128 * Mi),
        restart_count=1,
        last_terminated_reason="OOMKilled",
    ),
]


def scraped() -> list[Sample]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SimulatorCollector(lambda: SNAPSHOT))
    text = generate_latest(registry).decode()
    return [
        (sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def matches(labels: dict[str, str], matcher: Matcher) -> bool:
    """PromQL semantics: a missing label is the empty string; regexes are anchored."""
    value = labels.get(matcher.label, "")
    if matcher.op in ("=", "!="):
        return (value == matcher.value) == (matcher.op == "=")
    return bool(re.fullmatch(matcher.value, value)) == (matcher.op == "=~")


def selected(samples: list[Sample], metric: str, matchers: list[Matcher]) -> list[Sample]:
    return [s for s in samples if s[0] == metric and all(matches(s[1], m) for m in matchers)]


def test_every_metric_the_source_queries_is_exposed() -> None:
    exposed = {name for name, _, _ in scraped()}
    missing = set(MetricNames().model_dump().values()) - exposed
    assert not missing


def test_cadvisor_series_pass_the_source_filters_with_the_key_labels() -> None:
    samples = scraped()
    queries = HistoryQueries.build(QueryNames(), step=5)
    cadvisor = queries._cadvisor()
    keys = LabelNames()
    for metric in (MetricNames().cpu_usage, MetricNames().memory_working_set):
        chosen = selected(samples, metric, cadvisor)
        pods = {(s[1][keys.namespace], s[1][keys.pod], s[1][keys.container]) for s in chosen}
        # The evicted pod's containers are gone: no cAdvisor series for them. cAdvisor
        # names a sidecar's series like an app container's.
        expected = {("shop", "web", "app"), ("shop", "web", "proxy"), ("shop", "leaky", "worker")}
        assert pods == expected, metric
    throttled = selected(samples, MetricNames().cpu_throttled, cadvisor)
    assert [(s[1][keys.pod], s[2]) for s in throttled] == [("web", 3.5)]


def test_oom_and_eviction_are_shown_the_way_the_source_detects_them() -> None:
    samples = scraped()
    names = MetricNames()
    oom = selected(samples, names.last_terminated_reason, [Matcher("reason", "=", "OOMKilled")])
    assert [(s[1]["pod"], s[2]) for s in oom] == [("leaky", 1.0)]
    restarts = {s[1]["pod"]: s[2] for s in selected(samples, names.restarts, [])}
    assert restarts == {"web": 0.0, "leaky": 2.0, "batch": 0.0}
    evicted = selected(samples, names.pod_status_reason, [Matcher("reason", "=", "Evicted")])
    assert {s[1]["pod"]: s[2] for s in evicted} == {"web": 0.0, "leaky": 0.0, "batch": 1.0}
    memory_limits = selected(samples, names.limits, [Matcher("resource", "=", "memory")])
    assert {s[1]["pod"]: s[2] for s in memory_limits} == {p: 256.0 * Mi for p in restarts}
    cpu_limits = selected(samples, names.limits, [Matcher("resource", "=", "cpu")])
    assert {s[1]["pod"]: s[2] for s in cpu_limits} == {"web": 0.5}


def test_a_sidecars_state_is_under_the_init_container_names() -> None:
    """As kube-state-metrics: an init container's requests, limits, restarts and last
    termination are `kube_pod_init_container_*`, never the app containers' series."""
    samples = scraped()
    names = MetricNames()
    state = HistoryQueries.build(QueryNames(), step=5)._base(LabelNames())

    def containers(metric: str, *more: Matcher) -> dict[tuple[str, str], float]:
        chosen = selected(samples, metric, [*state, *more])
        return {(s[1]["pod"], s[1]["container"]): s[2] for s in chosen}

    memory = Matcher("resource", "=", "memory")
    oom = Matcher("reason", "=", "OOMKilled")
    assert containers(names.init_requests, memory) == {("web", "proxy"): 64.0 * Mi}
    assert containers(names.init_requests, Matcher("resource", "=", "cpu")) == {
        ("web", "proxy"): 0.1
    }
    assert containers(names.init_limits, memory) == {("web", "proxy"): 128.0 * Mi}
    assert containers(names.init_restarts) == {("web", "proxy"): 1.0}
    assert containers(names.init_last_terminated_reason, oom) == {("web", "proxy"): 1.0}
    app_series = [
        containers(names.requests),
        containers(names.limits),
        containers(names.restarts),
        containers(names.last_terminated_reason),
    ]
    assert all(("web", "proxy") not in found for found in app_series)
    assert ("web", "app") in containers(names.requests)
