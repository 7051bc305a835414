"""One pass of the recommender service: cluster + Prometheus -> model -> VPA statuses.

Data flows one way: the VPAs and pods say which namespaces to read, Prometheus
gives their history, the model (`vpa` or `forecast`) turns it into rows, and
each VPA we serve gets its status merged through the status subresource. With
the forecaster, the 24 h schedule is also written to a ConfigMap, which a pod
running `tailor follow` mounts as its schedule file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from typing import Any

import pandas as pd

from recommender.aggregates import vpa_rows
from recommender.data.prometheus import (
    EmptyHistoryError,
    PrometheusSettings,
)
from recommender.forecast.settings import ForecastSettings
from recommender.overrides import SettingsError
from recommender.recommend import fit_vpa_model, recommend_forecast_workloads
from recommender.service.checkpoints import (
    checkpoint_objects,
    delete_orphaned_checkpoints,
    write_checkpoints,
)
from recommender.service.events import RecommenderEvents
from recommender.service.history_cache import HistoryCache
from recommender.service.node_groups import write_node_groups
from recommender.service.policies import (
    FORECAST_SET_ANNOTATION,
    VPA_SET_ANNOTATION,
    oom_bumps,
    settings_groups,
)
from recommender.service.schedule_sink import served_schedule, write_schedule
from recommender.service.status import (
    ROW_COLUMNS,
    OwnSettings,
    ServedVpa,
    merged_status,
    served_vpas,
    vpa_status,
)
from recommender.service.target_refs import target_problems
from recommender.vpa.settings import VpaSettings
from tailor.api.meta import object_key
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.cluster_port import ClusterError, Json, RecommenderCluster
from tailor.events import ObjectRef
from tailor.hpa import HpaConflict, conflict_message, hpa_conflicts, hpas_by_namespace
from tailor.scope import NamespaceScope


class Model(StrEnum):
    vpa = "vpa"
    forecast = "forecast"


@dataclass(frozen=True)
class ServiceOptions:
    """Who we are among recommenders, what we read, which model, where the schedule goes."""

    prometheus: PrometheusSettings
    model: Model = Model.vpa
    recommender_name: str = "kube-tailor"
    is_default: bool = False
    forecast: ForecastSettings | None = None
    vpa: VpaSettings | None = None  # upstream's model: its flags' defaults unless set
    schedule_config_map: tuple[str, str] | None = None  # (namespace, name)
    scope: NamespaceScope = field(default_factory=NamespaceScope)
    count_throttling: bool = True  # CPU held back by limits counts as demand


@dataclass
class PassReport:
    """What a pass wrote: VPAs with and without a recommendation, refusals, schedule rows."""

    recommended: list[str] = field(default_factory=list)
    without: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    schedule_rows: int | None = None
    checkpoints: int = 0
    checkpoints_deleted: int = 0
    hpa_conflicts: list[str] = field(default_factory=list)  # "ns/vpa: reasons"
    hpas_unread: str | None = None  # why conflicts were not checked (e.g. 403: no RBAC)
    unsupported: list[str] = field(
        default_factory=list
    )  # "ns/vpa: its settings annotation's error"
    schedule_dropped: list[str] = field(default_factory=list)  # "ns/workload: why"
    writes_refused: list[str] = field(default_factory=list)  # checkpoints, the ConfigMap
    unreadable: list[str] = field(default_factory=list)  # "ns/vpa: field: why", skipped
    misdirected: list[str] = field(default_factory=list)  # "ns/vpa: its targetRef's problem"
    targets_unread: list[str] = field(default_factory=list)  # "ns/vpa: why", not checked
    node_groups: list[str] = field(default_factory=list)  # "ns/vpa: label: groups" written
    node_group_problems: list[str] = field(default_factory=list)  # "ns/vpa: why"


@dataclass
class _Fitted:
    """The model's rows, and what the model leaves for the writers (schedule, checkpoints)."""

    rows: pd.DataFrame
    schedule: pd.DataFrame | None = None
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    ooms: pd.DataFrame | None = None  # the history's OOM kills (for the Events)
    # what the model read, and each VPA's settings: refitted per node group (node_groups)
    usage: pd.DataFrame | None = None
    events: pd.DataFrame | None = None
    settings: dict[tuple[str, str], VpaSettings | ForecastSettings] = field(default_factory=dict)


def _fit(
    entries: list[ServedVpa],
    options: ServiceOptions,
    now: datetime,
    cache: HistoryCache | None = None,
) -> tuple[_Fitted, dict[tuple[str, str], OwnSettings]]:
    """The model run on the namespaces our VPAs' pods run in (no rows when none has history),
    once per group of VPAs that share settings (`settings_groups`); and what became of each
    VPA's own settings."""
    vpa_model = options.model is Model.vpa
    base: VpaSettings | ForecastSettings = (
        (options.vpa or VpaSettings()) if vpa_model else (options.forecast or ForecastSettings())
    )
    annotation = VPA_SET_ANNOTATION if vpa_model else FORECAST_SET_ANNOTATION
    groups, own = settings_groups(entries, base, annotation, options.model.value)
    namespaces = sorted(
        {e.vpa.namespace for group in groups.values() for e in group if e.workloads}
    )
    empty = _Fitted(pd.DataFrame(columns=ROW_COLUMNS))
    if not namespaces:
        return empty, own
    settings = options.prometheus.model_copy(update={"namespaces": tuple(namespaces)})
    try:
        usage, events = (cache or HistoryCache()).load(settings, now)
    except EmptyHistoryError:
        return empty, own
    step = int(settings.step_seconds)
    parts = []
    for chosen, group in groups.items():
        history = _usage_of(usage, chosen, base, groups)
        try:
            parts.append(_fit_group(group, chosen, history, events, options, now, step))
        except SettingsError as error:  # settings valid alone, not on this history's grid
            if chosen == base:
                raise  # the flags': every VPA would fail alike
            for entry in group:
                problem = f"{annotation}: {error}"
                own[(entry.vpa.namespace, entry.vpa.name)] = OwnSettings(annotation, problem)
    if not parts:  # every group's settings failed on this history
        return empty, own
    schedules = [part.schedule for part in parts if part.schedule is not None]
    kills = events[events["reason"] == "OOMKilled"] if "reason" in events else None
    chosen_of = {
        (entry.vpa.namespace, entry.vpa.name): chosen
        for chosen, group in groups.items()
        for entry in group
    }
    return (
        _Fitted(
            pd.concat([part.rows for part in parts], ignore_index=True),
            pd.concat(schedules, ignore_index=True) if schedules else None,
            [checkpoint for part in parts for checkpoint in part.checkpoints],
            kills,
            usage,
            events,
            chosen_of,
        ),
        own,
    )


def _usage_of(usage: pd.DataFrame, chosen: object, base: object, groups: dict) -> pd.DataFrame:
    """The history the VPAs with settings `chosen` are fitted on: all of it while every VPA
    shares the settings (the forecaster's fleet is then what it always was); else a group's
    own workloads, and for the flags' settings (`base`) whatever no other group claims."""
    if len(groups) == 1:
        return usage
    keys = pd.MultiIndex.from_frame(usage[["namespace", "workload"]])

    def workloads(group: list[ServedVpa]) -> list[tuple[str, str]]:
        return [(entry.vpa.namespace, name) for entry in group for name in entry.workloads]

    if chosen == base:
        others = [
            key for other, group in groups.items() if other != base for key in workloads(group)
        ]
        wanted = ~keys.isin(others)
    else:
        wanted = keys.isin(workloads(groups[chosen]))
    return usage[wanted].reset_index(drop=True)


def _fit_group(
    entries: list[ServedVpa],
    settings: VpaSettings | ForecastSettings,
    usage: pd.DataFrame,
    events: pd.DataFrame,
    options: ServiceOptions,
    now: datetime,
    step: int,
) -> _Fitted:
    """One model run, for VPAs that share `settings`."""
    if usage.empty:
        return _Fitted(pd.DataFrame(columns=ROW_COLUMNS))
    counted = options.count_throttling
    bumps = oom_bumps(entries)
    if isinstance(settings, VpaSettings):
        model, aggregates = fit_vpa_model(
            usage, events, settings, checked=True, count_throttling=counted, oom_bumps=bumps
        )
        checkpoints = checkpoint_objects(entries, model, aggregates, int(now.timestamp()))
        unshared = _unshared_containers(entries, aggregates)
        rows = vpa_rows(model, aggregates, noted=usage if counted else None, off=unshared)
        return _Fitted(rows, checkpoints=checkpoints)
    rows, schedule = recommend_forecast_workloads(
        usage,
        events,
        settings,
        step,
        checked=True,
        count_throttling=counted,
        oom_bumps=bumps,
    )
    return _Fitted(rows, schedule)


def _unshared_containers(
    entries: list[ServedVpa], aggregates: pd.DataFrame
) -> list[tuple[str, str, str]]:
    """Containers that take no share of the pod minimum, which upstream splits among the
    containers it recommends for: those in mode Off, and those of the history the VPA's pods
    do not size (a plain init container, which ran before the pod started)."""
    unshared = set()
    for entry in entries:
        vpa = entry.vpa
        sharing = {
            c
            for c in entry.containers
            if (policy := vpa.container_policy(c)) is None or not policy.is_off
        }
        mine = aggregates[
            (aggregates["namespace"] == vpa.namespace)
            & aggregates["workload"].isin(entry.workloads)
        ]
        for workload, container in zip(mine["workload"], mine["container"], strict=True):
            if container not in sharing:
                unshared.add((vpa.namespace, str(workload), str(container)))
    return sorted(unshared)


def _hpas(
    cluster: RecommenderCluster, options: ServiceOptions, report: PassReport
) -> dict[str, list[Json]] | None:
    """The HPAs in scope by namespace; None (and why, in the report) when unreadable: the
    recommendation is still written, without the conflict condition."""
    try:
        return hpas_by_namespace(cluster.hpas(options.scope.only), options.scope)
    except ClusterError as error:
        report.hpas_unread = str(error)
        return None


def _conflicts(
    entry: ServedVpa, hpas: dict[str, list[Json]] | None, report: PassReport
) -> list[HpaConflict] | None:
    if hpas is None:
        return None
    vpa = entry.vpa
    found = hpa_conflicts(vpa, hpas.get(vpa.namespace, []), entry.containers or None)
    if found:
        report.hpa_conflicts.append(f"{vpa.namespace}/{vpa.name}: {conflict_message(found)}")
    return found


def recommend_once(
    cluster: RecommenderCluster,
    options: ServiceOptions,
    now: datetime | None = None,
    collect_checkpoints: bool = False,
    history: HistoryCache | None = None,
    events: RecommenderEvents | None = None,
) -> PassReport:
    """Recompute and write every served VPA's status; raises on an unreachable source.

    With `collect_checkpoints` (and upstream's model, which keeps checkpoints) the
    checkpoints of VPAs that no longer exist are deleted too, as upstream's GC does.
    `history`: the service's cache of what earlier passes read (a full read without it).
    `events`: where each written VPA's Events go (none without it).
    """
    now = now or datetime.now(UTC)
    in_scope = options.scope.includes
    listed = [v for v in cluster.vpas() if in_scope(object_key(v)[0])]
    vpas, unreadable = VerticalPodAutoscaler.sorted_out(listed)
    as_listed = {object_key(v): v for v in listed}  # with the resourceVersion to write over
    entries = served_vpas(
        vpas,
        cluster.pods(),
        cluster.controllers("ReplicaSet"),
        options.recommender_name,
        options.is_default,
        cluster.controllers("Job"),
    )
    fitted, own = _fit(entries, options, now, history)
    rows, schedule = fitted.rows, fitted.schedule
    report = PassReport(unreadable=unreadable)
    hpas = _hpas(cluster, options, report) if entries else {}
    unmatched = [entry.vpa for entry in entries if not entry.workloads]
    targets, report.targets_unread = target_problems(cluster, unmatched)
    for entry in entries:
        key = (entry.vpa.namespace, entry.vpa.name)
        settings = own.get(key)
        conflicts = _conflicts(entry, hpas, report)
        status = vpa_status(entry, rows, now, conflicts, settings, targets.get(key))
        answer = cluster.write_vpa_status(as_listed[key], partial(merged_status, ours=status))
        if events is not None and answer.accepted:
            before = entry.vpa.status.recommendation if entry.vpa.status else None
            events.after_write(
                ObjectRef.vpa(entry.vpa.to_api()),
                before.to_api() if before is not None else None,
                status.get("recommendation"),
                entry.workloads,
                fitted.ooms,
            )
        label = f"{entry.vpa.namespace}/{entry.vpa.name}"
        if not answer.accepted:
            report.refused.append(f"{label}: {answer.message}")
        elif settings is not None and settings.problem is not None:
            report.unsupported.append(f"{label}: {settings.problem}")
        elif key in targets:
            report.misdirected.append(f"{label}: {targets[key]}")
        elif status.get("recommendation"):
            report.recommended.append(label)
        else:
            report.without.append(label)
    _write_node_groups(cluster, entries, fitted, options, now, report)
    report.checkpoints, refused = write_checkpoints(cluster, fitted.checkpoints)
    report.writes_refused += refused
    if collect_checkpoints and options.model is Model.vpa:
        report.checkpoints_deleted, refused = delete_orphaned_checkpoints(cluster, listed, in_scope)
        report.writes_refused += refused
    if options.schedule_config_map is not None and schedule is not None:
        served = served_schedule(schedule, entries, own)
        written = write_schedule(cluster, options.schedule_config_map, served)
        report.schedule_rows, report.schedule_dropped = written.rows, written.dropped
        report.writes_refused += written.refused
    return report


def _write_node_groups(
    cluster: RecommenderCluster,
    entries: list[ServedVpa],
    fitted: _Fitted,
    options: ServiceOptions,
    now: datetime,
    report: PassReport,
) -> None:
    """Each grouped VPA's (a DaemonSet's) recommendation per node group, in its annotation:
    the model of its own settings, run again on each group's pods."""
    step = int(options.prometheus.step_seconds)

    def refit(entry: ServedVpa, usage: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
        settings = fitted.settings[(entry.vpa.namespace, entry.vpa.name)]
        return _fit_group([entry], settings, usage, events, options, now, step).rows

    usable = [e for e in entries if (e.vpa.namespace, e.vpa.name) in fitted.settings]
    done = write_node_groups(cluster, usable, fitted.usage, fitted.events, refit)
    report.node_groups, report.node_group_problems = done.written, done.problems
