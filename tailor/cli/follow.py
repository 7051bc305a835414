"""`tailor follow`: the in-place updater, resizing running pods to `tailor schedule`'s plan.

It re-reads the schedule file on every pass, so a cron job rewriting it steers
the updater without a restart; a file broken mid-run keeps the last good plan,
and an API server that does not answer costs one pass, never the service.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer
from prometheus_client import CollectorRegistry, Counter
from rich.console import Console
from rich.table import Table

from tailor.change_budget import DEFAULT_CHANGES_PER_DAY
from tailor.cli import election as election_flags
from tailor.cli import follow_flags, memory_pressure, scope_flags
from tailor.cli.follow_flags import FollowFlags, FollowFormat
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
from tailor.cli.tables import print_table
from tailor.kube import Cluster, ClusterError
from tailor.lease import ApiLease
from tailor.schedule_configmap import decode_schedule
from tailor.schedule_file import (
    ScheduleError,
    ScheduleRow,
    aware_time,
    read_schedule,
)
from tailor.scope import NamespaceScope, ScopeError, protected_namespaces, protecting
from tailor.status_lease import StatusCheck
from tailor.telemetry import API_SERVER, DEFAULT_PORTS, ServiceTelemetry, answered, outage
from updater.decide import Action, Policy
from updater.follow import Outcome, Outcomes, PassOptions, follow_once
from updater.pressure import PRESSURE
from updater.rate import EvictionRate
from updater.recommendations import UpdateRules
from updater.report import updater_events
from updater.restriction import DisruptionLimits

LOG = logging.getLogger("tailor.follow")


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return aware_time(text)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--at") from None


def outcome_table(outcomes: list[Outcome]) -> Table:
    table = Table(title="kube-tailor follow", header_style="bold")
    for name in ("namespace", "pod", "workload", "action", "detail"):
        table.add_column(name)
    for item in outcomes:
        action = item.action.value if item.applied else f"{item.action.value} (refused)"
        table.add_row(item.namespace, item.pod, item.workload, action, item.detail)
    return table


def _print(outcomes: Outcomes, fmt: FollowFormat) -> None:
    if fmt is FollowFormat.json:
        sys.stdout.write(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n")
    else:
        print_table(outcome_table(outcomes))
    if outcomes.why_nothing:
        Console(stderr=fmt is FollowFormat.json).print(f"nothing to do: {outcomes.why_nothing}")
    for synced in outcomes.hpas:
        said = "HPA target rewritten" if synced.applied else "HPA target refused"
        text = f"{said}: {synced.namespace}/{synced.vpa}: {synced.detail}"
        Console(stderr=fmt is FollowFormat.json, soft_wrap=True).print(text, markup=False)


@dataclass(frozen=True)
class _Source:
    """Where each pass reads the schedule: a file, or the ConfigMap the recommender writes;
    neither with --recommendations (each VPA's status is the plan)."""

    path: Path | None
    config_map: tuple[str, str] | None

    def read(self, cluster: Cluster) -> list[ScheduleRow]:
        if self.path is not None:
            return read_schedule(self.path)
        if self.config_map is None:
            return []
        namespace, name = self.config_map
        where = f"ConfigMap {namespace}/{name}"
        try:
            data = cluster.config_map_data(namespace, name)
        except ClusterError as error:
            raise ScheduleError(str(error)) from None
        if data is None:
            raise ScheduleError(f"{where} does not exist")
        return decode_schedule(data, where)


def _source(path: Path | None, config_map: str | None, recommendations: bool) -> _Source:
    if [path is not None, config_map is not None, recommendations].count(True) != 1:
        raise typer.BadParameter(
            "give --schedule FILE, --schedule-configmap NAMESPACE/NAME or --recommendations"
        )
    if config_map is None:
        return _Source(path, None)
    return _Source(None, namespaced_name_flag(config_map, "--schedule-configmap"))


KEPT_SCHEDULE = "the last schedule read; no pod resized nor evicted this pass"
KEPT_PODS = "every pod not yet resized or evicted this pass, as it runs"


class UpdaterMetrics:
    """The updater's counters: what each pass did to the pods it considered, and apart the
    memory-pressure raises, which skip the change budget and so deserve their own alert."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.pods = Counter(
            "tailor_updater_pods",
            "Pods considered, by action (none, resize, wait, evict) and whether "
            "the API server took the write (applied).",
            ["action", "applied"],
            registry=registry,
        )
        self.pressure_raises = Counter(
            "tailor_updater_memory_pressure_raises",
            "Pods whose memory was raised in place under sustained memory pressure (PSI), "
            "by whether the API server took the resize (applied).",
            ["applied"],
            registry=registry,
        )

    def count(self, outcomes: Iterable[Outcome]) -> None:
        for item in outcomes:
            applied = str(item.applied).lower()
            self.pods.labels(item.action.value, applied).inc()
            if item.action is Action.RESIZE and item.detail.startswith(PRESSURE):
                self.pressure_raises.labels(applied).inc()


class _Follower:
    """The service's state between passes: the last schedule that read cleanly."""

    def __init__(
        self,
        cluster: Cluster,
        source: _Source,
        rows: list[ScheduleRow],
        options: PassOptions,
        telemetry: ServiceTelemetry | None,
    ) -> None:
        self.cluster, self.source, self.rows, self.options = cluster, source, rows, options
        self.telemetry = telemetry
        self.metrics = None if telemetry is None else UpdaterMetrics(telemetry.registry)

    def run_pass(self) -> bool:
        try:
            self.rows = self.source.read(self.cluster)
        except ScheduleError as error:
            LOG.error("%s; keeping the last good schedule", error)
        except ClusterError as error:
            outage(LOG, self.telemetry, API_SERVER, error, KEPT_SCHEDULE)
            return False
        try:
            outcomes = follow_once(self.cluster, self.rows, datetime.now(UTC), self.options)
        except ClusterError as error:
            outage(LOG, self.telemetry, API_SERVER, error, KEPT_PODS)
            return False
        answered(LOG, self.telemetry, API_SERVER)
        if outcomes.why_nothing:
            LOG.info("nothing to do: %s", outcomes.why_nothing)
        for synced in outcomes.hpas:
            LOG.info("HPA %s/%s: %s", synced.namespace, synced.hpa, synced.detail)
        for item in outcomes:
            if item.action.value != "none" or not item.applied:
                LOG.info("%s/%s %s: %s", item.namespace, item.pod, item.action.value, item.detail)
        if self.metrics is not None:
            self.metrics.count(outcomes)
        return True


def follow_command(
    schedule: follow_flags.Schedule = None,
    schedule_configmap: follow_flags.ScheduleConfigmap = None,
    kubeconfig: Kubeconfig = None,
    namespace: scope_flags.Namespace = None,
    vpa_object_namespace: VpaNamespace = None,
    ignored_vpa_object_namespaces: IgnoredNamespaces = None,
    protected_namespaces: follow_flags.ProtectedNamespaces = None,
    once: Once = False,
    interval: Interval = "1m",
    evict: follow_flags.Evict = False,
    min_replicas: follow_flags.MinReplicas = 2,
    eviction_tolerance: follow_flags.EvictionTolerance = 0.5,
    eviction_rate_limit: follow_flags.EvictionRateLimit = -1.0,
    eviction_rate_burst: follow_flags.EvictionRateBurst = 1,
    deferred_timeout: follow_flags.DeferredTimeout = "5m",
    evict_after_oom_threshold: follow_flags.EvictAfterOomThreshold = "10m",
    in_recommendation_bounds_eviction_lifetime_threshold: follow_flags.InBoundsLifetime = "12h",
    pod_update_threshold: follow_flags.PodUpdateThreshold = 0.1,
    in_progress_timeout: follow_flags.InProgressTimeout = "1h",
    recommendations: follow_flags.Recommendations = False,
    vpa: follow_flags.Vpa = False,
    allow_hpa_conflicts: follow_flags.AllowHpaConflicts = False,
    use_admission_controller_status: follow_flags.UseAdmissionControllerStatus = True,
    admission_status_lease: follow_flags.AdmissionStatusLease = None,
    changes_per_day: follow_flags.ChangesPerDay = DEFAULT_CHANGES_PER_DAY,
    dry_run: follow_flags.DryRun = False,
    overwrite_others_resizes: follow_flags.OverwriteOthersResizes = False,
    at: follow_flags.At = None,
    fmt: follow_flags.Fmt = FollowFormat.table,
    metrics_port: MetricsPort = DEFAULT_PORTS["updater"],
    leader_elect: election_flags.LeaderElect = False,
    lease_duration: election_flags.LeaseDuration = election_flags.LEASE_DURATION,
    renew_deadline: election_flags.RenewDeadline = election_flags.RENEW_DEADLINE,
    retry_period: election_flags.RetryPeriod = election_flags.RETRY_PERIOD,
    lease_name: election_flags.LeaseName = None,
    lease_namespace: election_flags.LeaseNamespace = None,
    memory_pressure_prometheus: memory_pressure.PressurePrometheus = None,
    memory_pressure_stalled: memory_pressure.PressureStalled = memory_pressure.DEFAULT_STALLED,
    memory_pressure_window: memory_pressure.PressureWindow = memory_pressure.DEFAULT_WINDOW,
) -> None:
    """Resize running pods in place to the schedule's requests (pods/resize)."""
    run_follow(FollowFlags(**locals()))


def pass_options(
    flags: FollowFlags,
    cluster: Cluster,
    scope: NamespaceScope,
    pressure: memory_pressure.MemoryPressure | None = None,
) -> PassOptions:
    """What each pass does, from the flags (durations and rates checked, exit 2)."""
    policy = Policy(
        evict=flags.evict,
        deferred_timeout=duration_flag(flags.deferred_timeout, "--deferred-timeout"),
        in_progress_timeout=duration_flag(flags.in_progress_timeout, "--in-progress-timeout"),
    )
    status_lease = election_flags.status_lease_flag(
        flags.admission_status_lease, "--admission-status-lease"
    )
    rules = UpdateRules(
        duration_flag(flags.evict_after_oom_threshold, "--evict-after-oom-threshold"),
        duration_flag(
            flags.in_recommendation_bounds_eviction_lifetime_threshold,
            "--in-recommendation-bounds-eviction-lifetime-threshold",
        ),
        flags.pod_update_threshold,
    )
    webhook_watched = flags.evict and flags.use_admission_controller_status
    return PassOptions(
        policy,
        frozenset(flags.namespace or ()) or None,
        DisruptionLimits(flags.min_replicas, flags.eviction_tolerance),
        flags.dry_run,
        use_vpa=flags.vpa or flags.recommendations,
        recommendations=flags.recommendations,
        scope=scope,
        allow_hpa_conflicts=flags.allow_hpa_conflicts,
        eviction_rate=EvictionRate(flags.eviction_rate_limit, flags.eviction_rate_burst),
        update_rules=rules,
        events=updater_events(cluster.core),
        overwrite_others=flags.overwrite_others_resizes,
        webhook_down=(
            StatusCheck(ApiLease(cluster.core.api_client, *status_lease))
            if webhook_watched
            else None
        ),
        changes_per_day=flags.changes_per_day or None,
        memory_pressure=pressure,
    )


def _first_rows(
    flags: FollowFlags, source: _Source, period: timedelta
) -> tuple[Cluster, list[ScheduleRow]]:
    """The cluster, and the plan read once before any pass (a broken one is exit 2)."""
    hint = "--schedule" if flags.schedule is not None else "--schedule-configmap"
    try:
        # a file is read before any connection, so a broken one is refused first
        rows = read_schedule(flags.schedule) if flags.schedule is not None else None
        cluster = connect(flags.kubeconfig, call_timeout(period))
        return cluster, rows if rows is not None else source.read(cluster)
    except ScheduleError as error:
        raise typer.BadParameter(str(error), param_hint=hint) from error


def _once(
    cluster: Cluster,
    rows: list[ScheduleRow],
    moment: datetime | None,
    options: PassOptions,
    chosen: election_flags.Election | None,
) -> Outcomes | None:
    """`--once`: one pass at `moment` (now by default), None when another replica leads."""
    try:
        with election_flags.held_once(chosen, cluster) as holder:
            if holder is not None:
                Console(stderr=True).print(f"standby: {holder} leads; no pass run")
                return None
            return follow_once(cluster, rows, moment or datetime.now(UTC), options)
    except ClusterError as error:
        Console(stderr=True).print(f"error: {error}")
        raise typer.Exit(1) from None


def run_follow(flags: FollowFlags) -> None:
    """Check the flags, then one pass (`--once`) or a pass every interval until SIGTERM."""
    if not math.isfinite(flags.eviction_rate_limit):
        raise typer.BadParameter("must be a finite number", param_hint="--eviction-rate-limit")
    period = interval_flag(flags.interval, flags.once)
    moment = _moment(flags.at)
    if moment is not None and not flags.once:
        raise typer.BadParameter("--at goes with --once", param_hint="--at")
    source = _source(flags.schedule, flags.schedule_configmap, flags.recommendations)
    scope = namespace_scope(flags.vpa_object_namespace, flags.ignored_vpa_object_namespaces)
    try:
        home = election_flags.own_namespace()
        scope = protecting(scope, protected_namespaces(flags.protected_namespaces, home))
    except ScopeError as error:
        raise typer.BadParameter(str(error), param_hint="--protected-namespaces") from None
    chosen = election_flags.election(
        "updater", flags.leader_elect, flags.lease_duration, flags.renew_deadline,
        flags.retry_period, flags.lease_name, flags.lease_namespace,
    )  # fmt: skip
    pressure = memory_pressure.memory_pressure_flags(
        flags.memory_pressure_prometheus,
        flags.memory_pressure_stalled,
        flags.memory_pressure_window,
    )
    cluster, rows = _first_rows(flags, source, period)
    each_pass = pass_options(flags, cluster, scope, pressure)
    if flags.once:
        outcomes = _once(cluster, rows, moment, each_pass, chosen)
        if outcomes is not None:
            _print(outcomes, flags.fmt)
        return
    elected = chosen is not None
    telemetry = service_telemetry("updater", flags.metrics_port, period, elected=elected)
    serve_telemetry(telemetry, flags.metrics_port)
    follower = _Follower(cluster, source, rows, each_pass, telemetry)
    leader = chosen.elector(cluster) if chosen is not None else None
    run_every(period, follower.run_pass, LOG, telemetry, leader)
