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
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from prometheus_client import Counter
from rich.console import Console
from rich.table import Table

from tailor.cli import election as election_flags
from tailor.cli import options
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
from tailor.status_lease import STATUS_LEASE, StatusCheck
from tailor.telemetry import API_SERVER, DEFAULT_PORTS, ServiceTelemetry, answered, outage
from updater.decide import Policy
from updater.follow import Outcome, Outcomes, PassOptions, follow_once
from updater.rate import EvictionRate
from updater.recommendations import UpdateRules
from updater.report import updater_events
from updater.restriction import DisruptionLimits

LOG = logging.getLogger("tailor.follow")


class FollowFormat(StrEnum):
    table = "table"
    json = "json"


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
        self.pods: Counter | None = None
        if telemetry is not None:
            self.pods = Counter(
                "tailor_updater_pods",
                "Pods considered, by action (none, resize, wait, evict) and whether "
                "the API server took the write (applied).",
                ["action", "applied"],
                registry=telemetry.registry,
            )

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
        for item in outcomes:
            if item.action.value != "none" or not item.applied:
                LOG.info("%s/%s %s: %s", item.namespace, item.pod, item.action.value, item.detail)
            if self.pods is not None:
                self.pods.labels(item.action.value, str(item.applied).lower()).inc()
        return True


def follow_command(
    schedule: Annotated[
        Path | None, typer.Option("--schedule", help="`tailor schedule --format json` output.")
    ] = None,
    schedule_configmap: Annotated[
        str | None,
        typer.Option(help="Or the ConfigMap NS/NAME `tailor recommender` writes the plan to."),
    ] = None,
    kubeconfig: Kubeconfig = None,
    namespace: options.Namespace = None,
    vpa_object_namespace: VpaNamespace = None,
    ignored_vpa_object_namespaces: IgnoredNamespaces = None,
    once: Once = False,
    interval: Interval = "1m",
    evict: Annotated[
        bool, typer.Option("--evict/--no-evict", help="Evict pods that cannot resize in place.")
    ] = False,
    min_replicas: Annotated[
        int,
        typer.Option(
            min=1, help="Evict only from controllers with this many live pods (VPA's overrides)."
        ),
    ] = 2,
    eviction_tolerance: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Share of a controller's replicas one pass may evict."),
    ] = 0.5,
    eviction_rate_limit: Annotated[
        float,
        typer.Option(help="Evictions per second at most, over all passes (<= 0: no limit)."),
    ] = -1.0,
    eviction_rate_burst: Annotated[
        int, typer.Option(min=1, help="Evictions at once under --eviction-rate-limit.")
    ] = 1,
    deferred_timeout: Annotated[
        str,
        typer.Option(help="Evict after Deferred, or without room on the node, this long."),
    ] = "5m",
    evict_after_oom_threshold: Annotated[
        str,
        typer.Option(
            help="With --recommendations: update at once a pod OOM-killed within this long of "
            "starting (a VPA's updatePolicy.evictAfterOOMSeconds wins)."
        ),
    ] = "10m",
    in_recommendation_bounds_eviction_lifetime_threshold: Annotated[
        str,
        typer.Option(
            help="With --recommendations: a pod up this long is updated within its bounds too."
        ),
    ] = "12h",
    pod_update_threshold: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="With --recommendations: the least relative change that updates a "
            "long-lived pod within its bounds.",
        ),
    ] = 0.1,
    in_progress_timeout: Annotated[
        str, typer.Option(help="Evict after in progress this long.")
    ] = "1h",
    recommendations: Annotated[
        bool,
        typer.Option(
            "--recommendations",
            help="Instead of a schedule, each pod's VPA recommendation (any recommender's), "
            "when upstream's updater would apply it; implies --vpa.",
        ),
    ] = False,
    vpa: Annotated[
        bool,
        typer.Option(
            "--vpa",
            help="Only pods whose VPA asks for in-place updates; its resource policy binds.",
        ),
    ] = False,
    allow_hpa_conflicts: Annotated[
        bool,
        typer.Option(
            "--allow-hpa-conflicts",
            help="With --vpa: also resize what an HPA scales on (cpu or memory utilization).",
        ),
    ] = False,
    use_admission_controller_status: Annotated[
        bool,
        typer.Option(
            "--use-admission-controller-status/--no-use-admission-controller-status",
            help="Evict only while the webhook renews its status Lease (it sizes the "
            "replacement); upstream's flag.",
        ),
    ] = True,
    admission_status_lease: Annotated[
        str | None,
        typer.Option(
            help="The webhook's status Lease NS/NAME (`tailor admission --status-lease`) "
            f"[default: the pod's namespace, else kube-tailor, /{STATUS_LEASE}]."
        ),
    ] = None,
    changes_per_day: Annotated[
        int,
        typer.Option(
            "--changes-per-day",
            min=0,
            help="Resizes a pod may take in any 24 h (and 2/3 of them in 16 h), counted on "
            "the pod (annotation kube-tailor.io/resized-at); a VPA's annotation "
            "kube-tailor.io/changes-per-day wins; 0: no cap.",
        ),
    ] = 6,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Send writes with dryRun=All: validated, not applied.")
    ] = False,
    overwrite_others_resizes: Annotated[
        bool,
        typer.Option(
            "--overwrite-others-resizes",
            help="Resize over a resize another actor made (default: await it and report it).",
        ),
    ] = False,
    at: Annotated[
        str | None, typer.Option("--at", help="With --once: follow the period in force then.")
    ] = None,
    fmt: Annotated[FollowFormat, typer.Option("--format", help="Output of --once.")] = (
        FollowFormat.table
    ),
    metrics_port: MetricsPort = DEFAULT_PORTS["updater"],
    leader_elect: election_flags.LeaderElect = False,
    lease_duration: election_flags.LeaseDuration = election_flags.LEASE_DURATION,
    renew_deadline: election_flags.RenewDeadline = election_flags.RENEW_DEADLINE,
    retry_period: election_flags.RetryPeriod = election_flags.RETRY_PERIOD,
    lease_name: election_flags.LeaseName = None,
    lease_namespace: election_flags.LeaseNamespace = None,
) -> None:
    """Resize running pods in place to the schedule's requests (pods/resize)."""
    policy = Policy(
        evict=evict,
        deferred_timeout=duration_flag(deferred_timeout, "--deferred-timeout"),
        in_progress_timeout=duration_flag(in_progress_timeout, "--in-progress-timeout"),
    )
    if not math.isfinite(eviction_rate_limit):
        raise typer.BadParameter("must be a finite number", param_hint="--eviction-rate-limit")
    period = interval_flag(interval, once)
    moment = _moment(at)
    if moment is not None and not once:
        raise typer.BadParameter("--at goes with --once", param_hint="--at")
    source = _source(schedule, schedule_configmap, recommendations)
    scope = namespace_scope(vpa_object_namespace, ignored_vpa_object_namespaces)
    chosen = election_flags.election(
        "updater",
        leader_elect,
        lease_duration,
        renew_deadline,
        retry_period,
        lease_name,
        lease_namespace,
    )
    status_lease = election_flags.status_lease_flag(
        admission_status_lease, "--admission-status-lease"
    )
    hint = "--schedule" if schedule is not None else "--schedule-configmap"
    try:
        # a file is read before any connection, so a broken one is refused first
        rows = read_schedule(schedule) if schedule is not None else None
        cluster = connect(kubeconfig, call_timeout(period))
        rows = rows if rows is not None else source.read(cluster)
    except ScheduleError as error:
        raise typer.BadParameter(str(error), param_hint=hint) from error
    pass_options = PassOptions(
        policy,
        frozenset(namespace or ()) or None,
        DisruptionLimits(min_replicas, eviction_tolerance),
        dry_run,
        use_vpa=vpa or recommendations,
        recommendations=recommendations,
        scope=scope,
        allow_hpa_conflicts=allow_hpa_conflicts,
        eviction_rate=EvictionRate(eviction_rate_limit, eviction_rate_burst),
        update_rules=UpdateRules(
            duration_flag(evict_after_oom_threshold, "--evict-after-oom-threshold"),
            duration_flag(
                in_recommendation_bounds_eviction_lifetime_threshold,
                "--in-recommendation-bounds-eviction-lifetime-threshold",
            ),
            pod_update_threshold,
        ),
        events=updater_events(cluster.core),
        overwrite_others=overwrite_others_resizes,
        webhook_down=(
            StatusCheck(ApiLease(cluster.core.api_client, *status_lease))
            if evict and use_admission_controller_status
            else None
        ),
        changes_per_day=changes_per_day or None,
    )
    if once:
        try:
            with election_flags.held_once(chosen, cluster) as holder:
                if holder is not None:
                    Console(stderr=True).print(f"standby: {holder} leads; no pass run")
                    return
                outcomes = follow_once(cluster, rows, moment or datetime.now(UTC), pass_options)
        except ClusterError as error:
            Console(stderr=True).print(f"error: {error}")
            raise typer.Exit(1) from None
        _print(outcomes, fmt)
        return
    telemetry = service_telemetry("updater", metrics_port, period, elected=chosen is not None)
    serve_telemetry(telemetry, metrics_port)
    follower = _Follower(cluster, source, rows, pass_options, telemetry)
    leader = chosen.elector(cluster) if chosen is not None else None
    run_every(period, follower.run_pass, LOG, telemetry, leader)
