"""PromQL building, escaping and settings of the Prometheus source, without a server."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import typer
from pydantic import ValidationError

from recommender.data.prometheus import (
    PrometheusSettings,
)
from recommender.data.promql import (
    OWNER_LABELS,
    HistoryQueries,
    LabelNames,
    Matcher,
    MetricNames,
    QueryNames,
    check_extra_matcher,
    one_of,
    plan_chunks,
    quote,
    regex_escape,
    selector,
    validate_label_name,
)
from tailor.cli.inputs import query_names

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def test_quote_escapes_backslash_quote_and_newline() -> None:
    assert quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    assert quote("plain") == '"plain"'


@pytest.mark.parametrize("value", ["team.a", "a|b", "x+(y)*", "[z]{2}^$?", "back\\slash"])
def test_regex_escape_matches_only_the_literal(value: str) -> None:
    pattern = regex_escape(value)
    assert re.fullmatch(pattern, value)
    assert not re.fullmatch(pattern, value.replace(".", "x").replace("|", "") + "_")


def test_regex_escape_keeps_the_dot_literal() -> None:
    assert regex_escape("team.a") == "team\\.a"
    assert not re.fullmatch(regex_escape("team.a"), "teamxa")


@pytest.mark.parametrize("name", ["bad-name", "1abc", "", "a b", 'x"', "ns{"])
def test_invalid_label_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="invalid Prometheus label name"):
        validate_label_name(name)
    with pytest.raises(ValueError):
        Matcher(name, "=", "x")
    with pytest.raises(ValidationError):
        PrometheusSettings(url="http://127.0.0.1:9", extra_matchers={name: "x"})
    with pytest.raises(ValidationError):
        LabelNames(namespace=name)


def test_invalid_metric_names_and_operators_are_rejected() -> None:
    with pytest.raises(ValidationError):
        MetricNames(cpu_usage='x{a="b"}')
    with pytest.raises(ValueError, match="operator"):
        Matcher("a", "==", "b")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="metric name"):
        selector("bad metric", [])


def test_matchers_render_escaped_values() -> None:
    rendered = selector("m", [Matcher("pod", "=", 'p"\\'), one_of("namespace", ["a.b", "c"])])
    assert rendered == 'm{pod="p\\"\\\\",namespace=~"a\\\\.b|c"}'


def test_queries_use_configured_labels_namespaces_and_extra_matchers() -> None:
    relabelled = LabelNames(
        namespace="exported_namespace", pod="pod_name", container="container_name"
    )
    queries = HistoryQueries.build(
        QueryNames(labels=relabelled, state_labels=relabelled),
        step=300,
        namespaces=["prod"],
        extra_matchers={"cluster": 'eu"1'},
    )
    assert queries.cpu_counter() == (  # no aggregation: the reader collapses duplicates
        'container_cpu_usage_seconds_total{cluster="eu\\"1",exported_namespace=~"prod",'
        'exported_namespace!="",pod_name!="",'
        'container_name!="",container_name!="POD",image!=""}'
    )
    assert queries.cpu_samples(86400).startswith("container_cpu_usage_seconds_total{")
    assert queries.cpu_samples(86400).endswith('image!=""}[86400s]')
    assert queries.memory_peak().endswith('image!=""}[300s] offset 1ms)')
    assert all('resource=~"cpu|memory"' in query for query in queries.requests())
    assert all('reason="OOMKilled"' in query for query in queries.oom_killed())
    assert queries.owners().startswith("max by (exported_namespace, pod_name, owner_kind")


def test_extra_matcher_names_are_validated_when_building_queries() -> None:
    with pytest.raises(ValueError, match="label name"):
        HistoryQueries.build(QueryNames(), 300, extra_matchers={"a-b": "x"})


@pytest.mark.parametrize(
    "name", ["__name__", "__address__", "container", "image", "resource", "reason", *OWNER_LABELS]
)
def test_extra_matchers_may_not_name_reserved_or_query_labels(name: str) -> None:
    """`__name__` fought the metric each query names; `reason`, `container`, ... emptied or
    skewed the queries that set or lack them. All three entry points refuse them."""
    with pytest.raises(ValueError, match=f"label '{name}' is (reserved|set by)"):
        check_extra_matcher(name, QueryNames())
    with pytest.raises(ValueError, match=f"'{name}'"):
        HistoryQueries.build(QueryNames(), 300, extra_matchers={name: "x"})
    with pytest.raises(ValidationError, match=f"'{name}'"):
        PrometheusSettings(url="http://127.0.0.1:9", extra_matchers={name: "x"})


def test_the_reserved_container_label_follows_the_configured_name() -> None:
    relabelled = QueryNames(labels=LabelNames(container="container_name"))
    with pytest.raises(ValueError, match="container_name"):
        check_extra_matcher("container_name", relabelled)
    with pytest.raises(ValueError, match="container"):  # kube-state-metrics' still is
        check_extra_matcher("container", relabelled)
    both = QueryNames(
        labels=LabelNames(container="container_name"),
        state_labels=LabelNames(container="exported_container"),
    )
    for name in ("container", "namespace", "pod", "cluster", "_private"):
        assert check_extra_matcher(name, both) == name
    for name in ("container_name", "exported_container"):
        with pytest.raises(ValueError, match=name):
            check_extra_matcher(name, both)
    assert check_extra_matcher("pod", QueryNames()) == "pod"  # every series carries it


def test_cadvisor_and_kube_state_metrics_series_keep_their_own_label_names() -> None:
    """A scrape without honor_labels renames kube-state-metrics' namespace and pod only."""
    exported = LabelNames(namespace="exported_namespace", pod="exported_pod")
    queries = HistoryQueries.build(QueryNames(state_labels=exported), 300, namespaces=["shop"])
    for cadvisor in (queries.cpu_counter(), queries.memory_peak()):
        assert 'namespace=~"shop",namespace!="",pod!=""' in cadvisor
        assert "exported" not in cadvisor
    for state in (*queries.requests(), *queries.restarts(), *queries.oom_killed()):
        assert 'exported_namespace=~"shop",exported_namespace!="",exported_pod!=""' in state
    assert 'exported_namespace=~"shop",exported_namespace!=""' in queries.evicted()
    assert queries.owners().startswith(  # the controller names the workload
        "max by (exported_namespace, exported_pod, owner_kind, owner_name, owner_is_controller) ("
    )


def test_a_match_on_namespace_or_pod_uses_each_sources_own_label() -> None:
    """`--match namespace=shop` selects the pod's namespace in both sources; applied as
    written it matched kube-state-metrics' scrape target and dropped all its series."""
    exported = LabelNames(namespace="exported_namespace", pod="exported_pod")
    extra = {"namespace": "shop", "pod": "web-0", "cluster": "prod"}
    queries = HistoryQueries.build(QueryNames(state_labels=exported), 300, extra_matchers=extra)
    assert 'cluster="prod",namespace="shop",pod="web-0",' in queries.cpu_counter()
    for state in (*queries.requests(), *queries.restarts(), queries.evicted(), queries.owners()):
        assert 'cluster="prod",exported_namespace="shop",exported_pod="web-0",' in state
        assert 'namespace="shop"' not in state.replace("exported_namespace", "")


def test_a_match_on_a_sources_renamed_label_means_the_pods_namespace_in_both() -> None:
    exported = LabelNames(namespace="exported_namespace", pod="exported_pod")
    extra = {"exported_namespace": "shop", "exported_pod": "web-0"}
    queries = HistoryQueries.build(QueryNames(state_labels=exported), 300, extra_matchers=extra)
    assert 'namespace="shop",pod="web-0",' in queries.cpu_counter()
    assert 'exported_namespace="shop",exported_pod="web-0",' in queries.requests()[0]


def test_container_state_is_read_for_app_and_init_containers_alike() -> None:
    """kube-state-metrics exports init containers (native sidecars) under their own names:
    each per-container read is two equally matched queries (no `or`, which Prometheus
    evaluates step by step), both landing on one grid."""
    queries = HistoryQueries.build(
        QueryNames(state_labels=LabelNames(namespace="exported_namespace")),
        step=300,
        namespaces=["team.a"],
        extra_matchers={"cluster": 'eu"1'},
    )
    base = 'cluster="eu\\"1",exported_namespace=~"team\\\\.a",exported_namespace!="",pod!=""'
    resources = f'{{{base},resource=~"cpu|memory"}}'
    assert queries.requests() == (
        f"kube_pod_container_resource_requests{resources}",
        f"kube_pod_init_container_resource_requests{resources}",
    )
    assert queries.limits() == (
        f"kube_pod_container_resource_limits{resources}",
        f"kube_pod_init_container_resource_limits{resources}",
    )
    assert queries.restarts() == (
        f"kube_pod_container_status_restarts_total{{{base}}}",
        f"kube_pod_init_container_status_restarts_total{{{base}}}",
    )
    oom = f'{{{base},reason="OOMKilled"}}'
    assert queries.oom_killed() == (
        f"kube_pod_container_status_last_terminated_reason{oom}",
        f"kube_pod_init_container_status_last_terminated_reason{oom}",
    )
    # pod-level series have no init counterpart
    assert " or " not in queries.evicted() and " or " not in queries.owners()


def test_init_container_metrics_are_renamed_with_prometheus_set() -> None:
    names = query_names(
        (
            "metrics.init_requests=ksm_init_requests",
            "metrics.init_limits=ksm_init_limits",
            "metrics.init_restarts=ksm_init_restarts_total",
            "metrics.init_last_terminated_reason=ksm_init_reason",
        )
    )
    queries = HistoryQueries.build(names, step=300)
    assert queries.requests()[1] == (
        'ksm_init_requests{namespace!="",pod!="",resource=~"cpu|memory"}'
    )
    assert queries.limits()[1].startswith("ksm_init_limits{")
    assert queries.restarts()[1].startswith("ksm_init_restarts_total{")
    assert queries.oom_killed()[1].startswith("ksm_init_reason{")
    assert "kube_pod_init_container" not in "".join(
        (*queries.requests(), *queries.limits(), *queries.restarts(), *queries.oom_killed())
    )
    with pytest.raises(typer.BadParameter, match="init_restarts: invalid Prometheus metric name"):
        query_names(("metrics.init_restarts=bad name",))
    with pytest.raises(typer.BadParameter, match=r"did you mean metrics\.init_limits"):
        query_names(("metrics.init_limit=x",))


def test_init_containers_exported_under_the_app_container_name_are_read_once() -> None:
    """A setup that relabels both families onto one name: one query, not the same twice."""
    merged = MetricNames(init_requests="kube_pod_container_resource_requests")
    queries = HistoryQueries.build(QueryNames(metrics=merged), step=300)
    assert len(queries.requests()) == 1
    assert queries.requests()[0].startswith("kube_pod_container_resource_requests{")
    assert len(queries.limits()) == 2


@pytest.mark.parametrize(
    ("start", "end", "step", "chunk"),
    [(0, 3000, 300, 900), (0, 3000, 300, 300), (600, 600, 60, 120), (0, 86400 * 3, 300, 25200)],
)
def test_chunks_partition_the_grid(start: int, end: int, step: int, chunk: int) -> None:
    runs = plan_chunks(start, end, step, chunk)
    points = [t for first, last in runs for t in range(first, last + step, step)]
    assert points == list(range(start, end + step, step))  # no gap, no duplicate
    assert all((last - first) // step + 1 <= chunk // step for first, last in runs)


def test_chunk_planning_rejects_bad_grids() -> None:
    with pytest.raises(ValueError, match="whole number"):
        plan_chunks(0, 1000, 300, 900)
    with pytest.raises(ValueError, match="11000"):
        plan_chunks(0, 300, 1, 20_000)


def test_settings_validate_step_and_chunk() -> None:
    with pytest.raises(ValidationError, match="multiple of step"):
        PrometheusSettings(url="http://x", step=timedelta(minutes=5), chunk=timedelta(minutes=7))
    with pytest.raises(ValidationError, match="whole number of seconds"):
        PrometheusSettings(url="http://x", step=timedelta(seconds=1.5), chunk=timedelta(seconds=3))
    with pytest.raises(ValidationError, match="11000"):
        PrometheusSettings(url="http://x", step=timedelta(seconds=1), chunk=timedelta(days=1))
    with pytest.raises(ValidationError, match="timezone-aware"):
        PrometheusSettings(url="http://x", start=datetime(2024, 1, 1))
    with pytest.raises(ValidationError, match="at least one step"):
        PrometheusSettings(url="http://x", history=timedelta(minutes=1))
    with pytest.raises(ValidationError, match="must come after start"):
        PrometheusSettings(url="http://x", start=T0, end=T0)
    with pytest.raises(ValidationError, match="multiple of step"):  # 0 is no chunk
        PrometheusSettings(url="http://x", step=timedelta(hours=2), chunk=timedelta(0))


def test_an_unset_chunk_fits_any_whole_second_step() -> None:
    """Only an explicit chunk can be refused: the default shrinks for short steps."""
    chunks = {
        step: PrometheusSettings(url="http://x", step=timedelta(seconds=step)).chunk
        for step in (300, 60, 7, 5, 1)
    }
    assert chunks[300] == chunks[60] == timedelta(days=1)
    assert chunks[5] == timedelta(seconds=5 * 11_000)
    assert chunks[1] == timedelta(seconds=11_000)
    assert chunks[7] == timedelta(seconds=7 * 11_000)  # a day is not a multiple of 7 s
    longer_than_a_day = timedelta(hours=25)  # one point a query, not none
    assert PrometheusSettings(url="http://x", step=longer_than_a_day).chunk == longer_than_a_day
    string_step = PrometheusSettings.model_validate({"url": "http://x", "step": "PT5S"})
    assert string_step.chunk == timedelta(seconds=5 * 11_000)


def test_range_defaults_to_eight_days_before_now_on_the_step_grid() -> None:
    settings = PrometheusSettings(url="http://x")
    now = T0 + timedelta(minutes=7, seconds=3)
    start, end = settings.resolve_range(now)
    assert end == int((T0 + timedelta(minutes=5)).timestamp())
    assert end - start == 8 * 86400
    explicit = PrometheusSettings(url="http://x", start=T0, end=T0 + timedelta(hours=1))
    assert explicit.resolve_range() == (int(T0.timestamp()), int(T0.timestamp()) + 3600)


def test_settings_are_frozen() -> None:
    settings = PrometheusSettings(url="http://x")
    with pytest.raises(ValidationError):
        settings.url = "http://y"  # type: ignore[misc]
