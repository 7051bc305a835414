"""The flags of `tailor follow`, declared once, and the value they are parsed into.

The updater has upstream's many knobs; declaring them here keeps `follow_command` a
list of flags handing one `FollowFlags` to `run_follow`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tailor.cli import election as election_flags
from tailor.cli import memory_pressure, scope_flags
from tailor.cli.service import (
    IgnoredNamespaces,
    Interval,
    Kubeconfig,
    MetricsPort,
    Once,
    VpaNamespace,
)
from tailor.status_lease import STATUS_LEASE


class FollowFormat(StrEnum):
    table = "table"
    json = "json"


Schedule = Annotated[
    Path | None, typer.Option("--schedule", help="`tailor schedule --format json` output.")
]
ScheduleConfigmap = Annotated[
    str | None,
    typer.Option(help="Or the ConfigMap NS/NAME `tailor recommender` writes the plan to."),
]
Evict = Annotated[
    bool, typer.Option("--evict/--no-evict", help="Evict pods that cannot resize in place.")
]
MinReplicas = Annotated[
    int,
    typer.Option(
        min=1, help="Evict only from controllers with this many live pods (VPA's overrides)."
    ),
]
EvictionTolerance = Annotated[
    float,
    typer.Option(min=0.0, max=1.0, help="Share of a controller's replicas one pass may evict."),
]
EvictionRateLimit = Annotated[
    float,
    typer.Option(help="Evictions per second at most, over all passes (<= 0: no limit)."),
]
EvictionRateBurst = Annotated[
    int, typer.Option(min=1, help="Evictions at once under --eviction-rate-limit.")
]
DeferredTimeout = Annotated[
    str,
    typer.Option(help="Evict after Deferred, or without room on the node, this long."),
]
EvictAfterOomThreshold = Annotated[
    str,
    typer.Option(
        help="With --recommendations: update at once a pod OOM-killed within this long of "
        "starting (a VPA's updatePolicy.evictAfterOOMSeconds wins)."
    ),
]
InBoundsLifetime = Annotated[
    str,
    typer.Option(
        help="With --recommendations: a pod up this long is updated within its bounds too."
    ),
]
PodUpdateThreshold = Annotated[
    float,
    typer.Option(
        min=0.0,
        help="With --recommendations: the least relative change that updates a "
        "long-lived pod within its bounds.",
    ),
]
InProgressTimeout = Annotated[str, typer.Option(help="Evict after in progress this long.")]
Recommendations = Annotated[
    bool,
    typer.Option(
        "--recommendations",
        help="Instead of a schedule, each pod's VPA recommendation (any recommender's), "
        "when upstream's updater would apply it; implies --vpa.",
    ),
]
Vpa = Annotated[
    bool,
    typer.Option(
        "--vpa",
        help="Only pods whose VPA asks for in-place updates; its resource policy binds.",
    ),
]
AllowHpaConflicts = Annotated[
    bool,
    typer.Option(
        "--allow-hpa-conflicts",
        help="With --vpa: also resize what an HPA scales on (cpu or memory utilization).",
    ),
]
UseAdmissionControllerStatus = Annotated[
    bool,
    typer.Option(
        "--use-admission-controller-status/--no-use-admission-controller-status",
        help="Evict only while the webhook renews its status Lease (it sizes the "
        "replacement); upstream's flag.",
    ),
]
AdmissionStatusLease = Annotated[
    str | None,
    typer.Option(
        help="The webhook's status Lease NS/NAME (`tailor admission --status-lease`) "
        f"[default: the pod's namespace, else kube-tailor, /{STATUS_LEASE}]."
    ),
]
ChangesPerDay = Annotated[
    int,
    typer.Option(
        "--changes-per-day",
        min=0,
        help="Resizes a pod may take in any 24 h (and 2/3 of them in 16 h), counted on "
        "the pod (annotation kube-tailor.io/resized-at); a VPA's annotation "
        "kube-tailor.io/changes-per-day wins; 0: no cap.",
    ),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Send writes with dryRun=All: validated, not applied.")
]
OverwriteOthersResizes = Annotated[
    bool,
    typer.Option(
        "--overwrite-others-resizes",
        help="Resize over a resize another actor made (default: await it and report it).",
    ),
]
At = Annotated[
    str | None, typer.Option("--at", help="With --once: follow the period in force then.")
]
Fmt = Annotated[FollowFormat, typer.Option("--format", help="Output of --once.")]


ProtectedNamespaces = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated namespaces never resized nor evicted in "
        "[default: kube-system and the pod's own namespace; '' for none].",
        show_default=False,
    ),
]


@dataclass(frozen=True)
class FollowFlags:
    """Every flag of `tailor follow`, as given (checked by `run_follow`)."""

    schedule: Path | None
    schedule_configmap: str | None
    kubeconfig: Kubeconfig
    namespace: scope_flags.Namespace
    vpa_object_namespace: VpaNamespace
    ignored_vpa_object_namespaces: IgnoredNamespaces
    protected_namespaces: str | None
    once: Once
    interval: Interval
    evict: bool
    min_replicas: int
    eviction_tolerance: float
    eviction_rate_limit: float
    eviction_rate_burst: int
    deferred_timeout: str
    evict_after_oom_threshold: str
    in_recommendation_bounds_eviction_lifetime_threshold: str
    pod_update_threshold: float
    in_progress_timeout: str
    recommendations: bool
    vpa: bool
    allow_hpa_conflicts: bool
    use_admission_controller_status: bool
    admission_status_lease: str | None
    changes_per_day: int
    dry_run: bool
    overwrite_others_resizes: bool
    at: str | None
    fmt: FollowFormat
    metrics_port: MetricsPort
    leader_elect: election_flags.LeaderElect
    lease_duration: election_flags.LeaseDuration
    renew_deadline: election_flags.RenewDeadline
    retry_period: election_flags.RetryPeriod
    lease_name: election_flags.LeaseName
    lease_namespace: election_flags.LeaseNamespace
    memory_pressure_prometheus: memory_pressure.PressurePrometheus = None
    memory_pressure_stalled: memory_pressure.PressureStalled = memory_pressure.DEFAULT_STALLED
    memory_pressure_window: memory_pressure.PressureWindow = memory_pressure.DEFAULT_WINDOW
