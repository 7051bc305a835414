"""`tailor recommender`: the recommender as a cluster service, writing VPA statuses.

A drop-in for the upstream recommender: the same objects, the same status fields
and conditions, `spec.recommenders` respected, with `--strategy forecast` our
model instead of upstream's, and its 24 h schedule published for `tailor follow`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated

import typer
from prometheus_client import Counter, Gauge
from rich.console import Console

from recommender.data.prometheus import PrometheusSourceError
from recommender.service.events import RecommenderEvents, recommender_events
from recommender.service.history_cache import HistoryCache
from recommender.service.passes import Model, PassReport, ServiceOptions, recommend_once
from tailor.api.crd import DEFAULT_RECOMMENDER_NAME
from tailor.cli import election as election_flags
from tailor.cli import memory_pressure, options
from tailor.cli.inputs import PrometheusOptions, prometheus_settings
from tailor.cli.service import (
    IgnoredNamespaces,
    Interval,
    Kubeconfig,
    MetricsPort,
    Once,
    VpaNamespace,
    call_timeout,
    connect,
    duration_flag,
    interval_flag,
    namespace_scope,
    namespaced_name_flag,
    run_every,
    serve_telemetry,
    service_telemetry,
)
from tailor.kube import Cluster, ClusterError
from tailor.scope import NamespaceScope
from tailor.telemetry import (
    API_SERVER,
    DEFAULT_PORTS,
    PROMETHEUS,
    ServiceTelemetry,
    answered,
    outage,
)

LOG = logging.getLogger("tailor.recommender")


def _config_map(text: str | None, model: Model) -> tuple[str, str] | None:
    if text is None:
        return None
    if model is not Model.forecast:
        raise typer.BadParameter(
            "a schedule needs --strategy forecast", param_hint="--schedule-configmap"
        )
    return namespaced_name_flag(text, "--schedule-configmap")


def _report_lines(report: PassReport) -> list[str]:
    lines = [f"recommended: {label}" for label in report.recommended]
    lines += [f"no recommendation yet: {label}" for label in report.without]
    lines += [f"refused: {label}" for label in report.refused + report.writes_refused]
    lines += [f"unsupported config (recommendation kept): {label}" for label in report.unsupported]
    lines += [f"HPA conflict: {label}" for label in report.hpa_conflicts]
    lines += [f"unreadable VPA (skipped): {label}" for label in report.unreadable]
    lines += [f"unsupported targetRef: {label}" for label in report.misdirected]
    lines += [f"targetRef not checked: {label}" for label in report.targets_unread]
    lines += [f"node groups: {label}" for label in report.node_groups]
    lines += [f"node groups not written: {label}" for label in report.node_group_problems]
    if report.checkpoints:
        lines.append(f"checkpoints: {report.checkpoints} written")
    if report.checkpoints_deleted:
        lines.append(f"checkpoints: {report.checkpoints_deleted} deleted (their VPA is gone)")
    if report.schedule_rows is not None:
        lines.append(f"schedule: {report.schedule_rows} rows written")
    lines += [f"schedule: left out {label}" for label in report.schedule_dropped]
    return lines


# what a pass that a dependency ended leaves as it was
KEPT_ON_PROMETHEUS = (
    "every VPA's last recommendation and conditions, and the schedule's last plan "
    "(nothing is written before the history is read)"
)
KEPT_ON_API_SERVER = "the last recommendation of every VPA not written this pass"


def _one_pass(
    cluster: Cluster,
    service: ServiceOptions,
    collect: bool,
    cache: HistoryCache,
    telemetry: ServiceTelemetry | None,
    events: RecommenderEvents | None = None,
) -> PassReport | None:
    """A pass, or None when a dependency did not answer or refused: one error line naming
    it and what was kept (run_every logs other failures' traces)."""
    try:
        report = recommend_once(
            cluster, service, collect_checkpoints=collect, history=cache, events=events
        )
    except PrometheusSourceError as error:
        outage(LOG, telemetry, PROMETHEUS, error, KEPT_ON_PROMETHEUS)
        return None
    except ClusterError as error:
        outage(LOG, telemetry, API_SERVER, error, KEPT_ON_API_SERVER)
        return None
    answered(LOG, telemetry, API_SERVER, PROMETHEUS)
    return report


class _PassMetrics:
    """What the last pass did, for /metrics: VPAs by state, schedule rows, checkpoints."""

    def __init__(self, telemetry: ServiceTelemetry) -> None:
        self.vpas = Gauge(
            "tailor_recommender_vpas",
            "VPAs served in the last pass, by state "
            "(recommended, no_recommendation, refused, unsupported).",
            ["state"],
            registry=telemetry.registry,
        )
        self.checkpoints = Counter(
            "tailor_recommender_checkpoints_written",
            "VerticalPodAutoscalerCheckpoints written.",
            registry=telemetry.registry,
        )
        self.hpa_conflicts = Gauge(
            "tailor_recommender_hpa_conflicts",
            "VPAs served in the last pass that an HPA scales on a resource they control "
            "(condition HorizontalAutoscalerConflict True); kept by a pass that cannot list HPAs.",
            registry=telemetry.registry,
        )
        self.schedule_rows = Gauge(
            "tailor_recommender_schedule_rows",
            "Rows of the schedule ConfigMap written in the last pass.",
            registry=telemetry.registry,
        )

    def record(self, report: PassReport) -> None:
        self.vpas.labels("recommended").set(len(report.recommended))
        self.vpas.labels("no_recommendation").set(len(report.without))
        self.vpas.labels("refused").set(len(report.refused))
        self.vpas.labels("unsupported").set(len(report.unsupported) + len(report.misdirected))
        if report.hpas_unread is None:  # unknown, not none, when the HPAs were unreadable
            self.hpa_conflicts.set(len(report.hpa_conflicts))
        self.checkpoints.inc(report.checkpoints)
        if report.schedule_rows is not None:
            self.schedule_rows.set(report.schedule_rows)


PrometheusUrl = Annotated[str, typer.Option("--prometheus", help="Prometheus base URL.")]
StrategyFlag = Annotated[Model, typer.Option(help="The model: upstream's or ours.")]
RecommenderName = Annotated[
    str, typer.Option("--recommender-name", help="Serve VPAs naming this recommender.")
]
Default = Annotated[
    bool,
    typer.Option("--default", help="Also serve VPAs naming no recommender (replace upstream's)."),
]
ScheduleConfigMap = Annotated[
    str | None,
    typer.Option(help="With --strategy forecast: write the schedule to ConfigMap NS/NAME."),
]
CheckpointsGcInterval = Annotated[
    str,
    typer.Option(help="How often checkpoints of deleted VPAs are deleted (--strategy vpa)."),
]


def model_flags(
    strategy: Model,
    forecast_set: list[str] | None,
    changes_per_day: int | None,
    vpa_set: list[str] | None,
) -> None:
    """A model's settings given for the other model are refused."""
    if forecast_set and strategy is not Model.forecast:
        raise typer.BadParameter("goes with --strategy forecast", param_hint="--forecast-set")
    if changes_per_day is not None and strategy is not Model.forecast:
        raise typer.BadParameter("goes with --strategy forecast", param_hint="--changes-per-day")
    if vpa_set and strategy is not Model.vpa:
        raise typer.BadParameter("goes with --strategy vpa", param_hint="--vpa-set")


@dataclass(frozen=True)
class ModelChoice:
    """The model flags: which model, with which settings."""

    model: Model
    forecast_set: list[str] | None
    changes_per_day: int | None
    vpa_set: list[str] | None
    count_throttling: bool


def service_options(
    source: PrometheusOptions,
    period: timedelta,
    choice: ModelChoice,
    name: str,
    default: bool,
    schedule_configmap: str | None,
    scope: NamespaceScope,
) -> ServiceOptions:
    """The service's settings from its flags, checked (exit 2)."""
    bounded = {"timeout_seconds": call_timeout(period)}  # a frozen Prometheus costs one pass
    prometheus = prometheus_settings(source).model_copy(update=bounded)
    forecast = options.forecast_settings(choice.forecast_set)
    return ServiceOptions(
        prometheus=prometheus,
        model=choice.model,
        recommender_name=name,
        is_default=default or name == DEFAULT_RECOMMENDER_NAME,
        forecast=options.with_budget(forecast, choice.changes_per_day),
        vpa=options.vpa_settings(choice.vpa_set),
        scope=scope,
        schedule_config_map=_config_map(schedule_configmap, choice.model),
        count_throttling=choice.count_throttling,
    )


def run_once(
    cluster: Cluster, service: ServiceOptions, chosen: election_flags.Election | None
) -> None:
    """`--once`: one pass (unless another replica leads), what it did on stdout."""
    try:
        with election_flags.held_once(chosen, cluster) as holder:
            if holder is not None:
                Console(stderr=True).print(f"standby: {holder} leads; no pass run")
                return
            events = RecommenderEvents(recommender_events(cluster.core))
            report = recommend_once(cluster, service, collect_checkpoints=True, events=events)
    except (ClusterError, PrometheusSourceError) as error:
        Console(stderr=True).print(f"error: {error}")
        raise typer.Exit(1) from None
    for line in _report_lines(report):
        print(line)
    if report.hpas_unread is not None:
        Console(stderr=True).print(f"HPA conflicts not checked: {report.hpas_unread}")


class Passes:
    """The service between passes: the history cache, Events, when checkpoints were last
    collected, and the pass metrics."""

    def __init__(
        self,
        cluster: Cluster,
        service: ServiceOptions,
        gc_every: timedelta,
        telemetry: ServiceTelemetry | None,
    ) -> None:
        self.cluster, self.service, self.gc_every = cluster, service, gc_every
        self.telemetry = telemetry
        self.metrics = _PassMetrics(telemetry) if telemetry is not None else None
        self.last_collected: float | None = None  # when the checkpoint GC last ran
        # each pass reads only the history that is new since the last; every chunk read
        # counts as life for the health check, so a first pass over a large cluster is
        # not restarted
        self.events = RecommenderEvents(recommender_events(cluster.core))  # across passes
        self.cache = HistoryCache(
            progress=(lambda done, total: telemetry.record_activity()) if telemetry else None
        )

    def run_pass(self) -> bool:
        now = time.monotonic()
        last = self.last_collected
        due = last is None or now - last >= self.gc_every.total_seconds()
        report = _one_pass(self.cluster, self.service, due, self.cache, self.telemetry, self.events)
        if report is None:
            return False
        if due:
            self.last_collected = now
        for line in _report_lines(report):
            LOG.info("%s", line)
        if report.hpas_unread is not None:
            LOG.warning("HPA conflicts not checked this pass: %s", report.hpas_unread)
        if self.metrics is not None:
            self.metrics.record(report)
        return True


def recommender_command(
    prometheus: PrometheusUrl,
    history: options.History = options.HISTORY_DEFAULT,
    step: options.Step = options.STEP_DEFAULT,
    chunk: options.Chunk = None,
    match: options.Match = None,
    token_file: options.TokenFile = None,
    insecure: options.Insecure = False,
    prometheus_set: options.PrometheusSet = None,
    prometheus_username: options.PrometheusUsername = None,
    prometheus_password_file: options.PrometheusPasswordFile = None,
    memory_pressure_stalled: memory_pressure.HistoryStalled = memory_pressure.DEFAULT_STALLED,
    memory_pressure_window: memory_pressure.HistoryWindow = memory_pressure.DEFAULT_WINDOW,
    kubeconfig: Kubeconfig = None,
    strategy: StrategyFlag = Model.vpa,
    forecast_set: options.ForecastSet = None,
    changes_per_day: options.ChangesPerDay = None,
    vpa_set: options.VpaSet = None,
    ignore_throttling: options.IgnoreThrottling = False,
    name: RecommenderName = "kube-tailor",
    default: Default = False,
    schedule_configmap: ScheduleConfigMap = None,
    vpa_object_namespace: VpaNamespace = None,
    ignored_vpa_object_namespaces: IgnoredNamespaces = None,
    once: Once = False,
    interval: Interval = "1m",
    checkpoints_gc_interval: CheckpointsGcInterval = "10m",
    metrics_port: MetricsPort = DEFAULT_PORTS["recommender"],
    leader_elect: election_flags.LeaderElect = False,
    lease_duration: election_flags.LeaseDuration = election_flags.LEASE_DURATION,
    renew_deadline: election_flags.RenewDeadline = election_flags.RENEW_DEADLINE,
    retry_period: election_flags.RetryPeriod = election_flags.RETRY_PERIOD,
    lease_name: election_flags.LeaseName = None,
    lease_namespace: election_flags.LeaseNamespace = None,
) -> None:
    """Keep the status of every VPA we serve current, from Prometheus history."""
    model_flags(strategy, forecast_set, changes_per_day, vpa_set)
    source = PrometheusOptions(
        prometheus, history, step, chunk, (), tuple(match or ()), token_file, insecure,
        tuple(prometheus_set or ()), prometheus_username, prometheus_password_file,
        memory_pressure.pressure_rule(memory_pressure_stalled, memory_pressure_window),
    )  # fmt: skip
    period = interval_flag(interval, once)
    model = ModelChoice(strategy, forecast_set, changes_per_day, vpa_set, not ignore_throttling)
    service = service_options(
        source, period, model, name, default, schedule_configmap,
        namespace_scope(vpa_object_namespace, ignored_vpa_object_namespaces),
    )  # fmt: skip
    gc_every = duration_flag(checkpoints_gc_interval, "--checkpoints-gc-interval", "1s")
    chosen = election_flags.election(
        "recommender", leader_elect, lease_duration, renew_deadline, retry_period,
        lease_name, lease_namespace,
    )  # fmt: skip
    cluster = connect(kubeconfig, call_timeout(period))
    if once:
        run_once(cluster, service, chosen)
        return
    watched = (API_SERVER, PROMETHEUS)
    telemetry = service_telemetry("recommender", metrics_port, period, chosen is not None, watched)
    serve_telemetry(telemetry, metrics_port)
    passes = Passes(cluster, service, gc_every, telemetry)
    leader = chosen.elector(cluster) if chosen is not None else None
    run_every(period, passes.run_pass, LOG, telemetry, leader)
