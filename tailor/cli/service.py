"""What the long-running commands share: flags for the interval, a loop that outlives errors.

`tailor follow` and `tailor recommender` run a pass every interval on apscheduler,
one at a time (a slow pass delays the next instead of overlapping it), and stop
cleanly on SIGTERM, as a pod is stopped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.interval import IntervalTrigger

from tailor.durations import DurationError, parse_duration
from tailor.kube import Cluster, ClusterError, api_client_from
from tailor.kube_client import DEFAULT_TIMEOUT
from tailor.leader import LeaderElector
from tailor.names import InvalidName, namespace_name, object_name
from tailor.scope import NamespaceScope, ScopeError
from tailor.telemetry import API_SERVER, STALE_INTERVALS, ServiceTelemetry, TelemetryServer

Kubeconfig = Annotated[
    Path | None, typer.Option(help="Kubeconfig (default: in-cluster, else ~/.kube/config).")
]
Once = Annotated[bool, typer.Option("--once", help="One pass, print what it did, exit.")]
Interval = Annotated[str, typer.Option(help="Time between passes.")]
MetricsPort = Annotated[
    int,
    typer.Option(
        min=0, max=65535, help="Serve /metrics and /health-check on this port (0: not at all)."
    ),
]


def duration_flag(text: str, option: str, at_least: str | None = None) -> timedelta:
    """A duration flag, refused (exit 2) when unreadable, negative or under `at_least`."""
    try:
        span = parse_duration(text)
    except DurationError as error:
        raise typer.BadParameter(str(error), param_hint=option) from error
    if span < timedelta(0):
        raise typer.BadParameter(f"must not be negative, got {text!r}", param_hint=option)
    if at_least is not None and span < parse_duration(at_least):
        raise typer.BadParameter(f"must be at least {at_least}", param_hint=option)
    return span


def interval_flag(text: str, once: bool) -> timedelta:
    return duration_flag(text, "--interval", None if once else "1s")


def namespaced_name_flag(text: str, option: str) -> tuple[str, str]:
    """An object (a ConfigMap, a Service) named NAMESPACE/NAME on the command line, with
    names the API server accepts."""
    namespace, slash, name = text.partition("/")
    if not slash or not namespace or not name or "/" in name:
        raise typer.BadParameter(f"want NAMESPACE/NAME, got {text!r}", param_hint=option)
    try:
        return namespace_name(namespace), object_name(name)
    except InvalidName as error:
        raise typer.BadParameter(str(error), param_hint=option) from None


def call_timeout(period: timedelta) -> float:
    """Seconds one call to a dependency may wait for an answer: half the interval, within
    10 s and 30 s, so an outage costs one pass at most, not the service (the floor keeps
    a busy API server or Prometheus from failing passes that are merely slow)."""
    return min(30.0, max(10.0, period.total_seconds() / 2))


def connect(kubeconfig: Path | None, read_timeout: float = DEFAULT_TIMEOUT[1]) -> Cluster:
    """The API server the kubeconfig names, each call waiting `read_timeout` seconds at
    most for an answer; a missing or broken kubeconfig is exit 2."""
    try:
        return Cluster(api_client_from(kubeconfig, (DEFAULT_TIMEOUT[0], read_timeout)))
    except ClusterError as error:
        raise typer.BadParameter(str(error), param_hint="--kubeconfig") from error


def service_telemetry(
    component: str,
    port: int,
    period: timedelta,
    elected: bool = False,
    dependencies: tuple[str, ...] = (API_SERVER,),
) -> ServiceTelemetry | None:
    """The service's counters (None with port 0); healthy while a pass ends every 5 periods.
    `elected`: the replica works only once it holds the leader lease; `dependencies`: the
    outside services it calls, each with a metric and a line in /health-check when down."""
    if port == 0:
        return None
    stale = STALE_INTERVALS * period.total_seconds()
    return ServiceTelemetry(component, stale, elected=elected, dependencies=dependencies)


def serve_telemetry(telemetry: ServiceTelemetry | None, port: int) -> TelemetryServer | None:
    """Listen for /metrics and /health-check: the service's last check, a busy port is exit 2."""
    if telemetry is None:
        return None
    try:
        return TelemetryServer(telemetry, requested_port=port).start()
    except OSError as error:
        raise typer.BadParameter(
            f"cannot listen on {port}: {error}", param_hint="--metrics-port"
        ) from None


def _stop_now(log: logging.Logger) -> None:
    """A replica that lost its lease stops at once, mid-pass too: the next leader may start
    a lease duration after the last renewal, and two must never act together."""
    log.error("lost the leader lease; exiting so the pod restarts as a standby")
    logging.shutdown()
    os._exit(1)


def run_every(
    period: timedelta,
    run_pass: Callable[[], bool],
    log: logging.Logger,
    telemetry: ServiceTelemetry | None = None,
    leader: LeaderElector | None = None,
) -> None:
    """Call `run_pass` now and every `period` until SIGTERM; a failing pass is logged only.

    `run_pass` says whether it finished its work; an exception counts as not. With a
    `leader`, passes run only while it holds the lease; the first starts when it wins.
    """

    def guarded() -> None:
        if leader is not None and not leader.is_leader():
            if telemetry is not None:
                telemetry.record_standby()
            return
        begun = time.monotonic()
        succeeded = False
        try:
            succeeded = run_pass()
        except Exception:  # a service outlives one bad pass; the trace goes to the log
            log.exception("pass failed; retrying next pass")
        if telemetry is not None:
            telemetry.record_pass(succeeded, time.monotonic() - begun)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    scheduler = BlockingScheduler(timezone=UTC)
    trigger = IntervalTrigger(seconds=period.total_seconds(), timezone=UTC)
    if leader is not None:
        leader.step()  # a lone replica leads from its first pass
    job = scheduler.add_job(
        guarded, trigger, next_run_time=datetime.now(UTC), max_instances=1, coalesce=True
    )
    if leader is not None:
        _follow_leadership(
            leader, log, telemetry, lambda: job.modify(next_run_time=datetime.now(UTC))
        )
    signal.signal(signal.SIGTERM, lambda *_: scheduler.shutdown(wait=False))
    try:
        with contextlib.suppress(KeyboardInterrupt):
            scheduler.start()
    finally:
        if leader is not None:
            leader.stop()  # releases the lease: a standby takes over at its next attempt


def _follow_leadership(
    leader: LeaderElector,
    log: logging.Logger,
    telemetry: ServiceTelemetry | None,
    run_now: Callable[[], None],
) -> None:
    """Wire the elector to the loop: a won lease runs a pass at once, a lost one ends it."""

    def started() -> None:
        if telemetry is not None:
            telemetry.leader.set(1)
        run_now()

    leader.on_started = started
    leader.on_lost = lambda: _stop_now(log)
    if telemetry is not None:
        telemetry.leader.set(1 if leader.is_leader() else 0)
    leader.start()


VpaNamespace = Annotated[
    str | None,
    typer.Option(
        "--vpa-object-namespace", help="Act only in this namespace (default: all), as upstream."
    ),
]
IgnoredNamespaces = Annotated[
    str | None,
    typer.Option(
        "--ignored-vpa-object-namespaces", help="Comma-separated namespaces never acted in."
    ),
]


def namespace_scope(only: str | None, ignored: str | None) -> NamespaceScope:
    """The scope the two flags give; a name the API server could not hold is exit 2."""
    try:
        return NamespaceScope.parse(only, ignored)
    except ScopeError as error:
        raise typer.BadParameter(str(error), param_hint="--vpa-object-namespace") from None
