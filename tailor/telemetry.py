"""A service's own telemetry: Prometheus metrics and a health check on one plain-HTTP port.

Operators scrape `/metrics` and point the liveness probe at `/health-check`, as with
the upstream VPA's components (ports 8942 recommender, 8943 updater, 8944 admission).
Each service owns its registry, never prometheus_client's global one, so a test or a
notebook can run several services in one process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

DEFAULT_PORTS = {"recommender": 8942, "updater": 8943, "admission": 8944}
# A pass missing for this many intervals means the loop is stuck: restart the pod.
STALE_INTERVALS = 5
SLOW_PASS_FACTOR = 3
_PASS_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


class Dependencies:
    """The state of each outside service a component calls (the API server, Prometheus):
    up, or down since when and why, for /metrics and the /health-check answer.

    A dependency is down from a pass that failed on it until a pass that reached it; each
    change is logged once (an error going down, a notice coming back), not every pass.
    """

    def __init__(
        self,
        component: str,
        names: Iterable[str],
        registry: CollectorRegistry,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        self.up = Gauge(
            f"tailor_{component}_dependency_up",
            "1 while the last call to the dependency answered, 0 from a failed one.",
            ["dependency"],
            registry=registry,
        )
        self.failures = Counter(
            f"tailor_{component}_dependency_failures",
            "Passes ended by a dependency that did not answer or refused.",
            ["dependency"],
            registry=registry,
        )
        self.down: dict[str, tuple[float, str]] = {}  # name -> (since, why)
        for name in names:  # every series exists from the start, up until shown otherwise
            self.up.labels(name).set(1)
            self.failures.labels(name)

    def failed(self, name: str, why: str) -> bool:
        """Record a failure; True when the dependency was up until now."""
        self.up.labels(name).set(0)
        self.failures.labels(name).inc()
        first = name not in self.down
        since = self.down[name][0] if not first else self.clock()
        self.down[name] = (since, why)
        return first

    def answered(self, name: str) -> float | None:
        """Record an answer; how long it had been down (None: it was up)."""
        self.up.labels(name).set(1)
        gone = self.down.pop(name, None)
        return None if gone is None else self.clock() - gone[0]

    def lines(self) -> list[str]:
        now = self.clock()
        return [
            f"{name} down for {now - since:.0f}s: {why}"
            for name, (since, why) in sorted(self.down.items())
        ]


class ServiceTelemetry:
    """Counts a service's passes; healthy while a pass succeeded within `stale_after_seconds`,
    or within three times the slowest successful pass, whichever is longer.

    Before the first success the start time stands in, so a slow first pass is not a
    restart loop; a cluster whose passes take longer than five intervals is not one either.
    """

    def __init__(
        self,
        component: str,
        stale_after_seconds: float,
        clock: Callable[[], float] = time.time,
        elected: bool = False,
        dependencies: Iterable[str] = (),
    ) -> None:
        self.component, self.stale_after, self.clock = component, stale_after_seconds, clock
        self.registry = CollectorRegistry()
        self.dependencies = Dependencies(component, dependencies, self.registry, clock)
        prefix = f"tailor_{component}"
        self.passes = Counter(
            f"{prefix}_passes",
            "Passes run, by outcome (ok: it finished; failed: an error ended it; "
            "standby: skipped, another replica holds the leader lease).",
            ["outcome"],
            registry=self.registry,
        )
        self.pass_seconds = Histogram(
            f"{prefix}_pass_duration_seconds",
            "How long a pass took.",
            buckets=_PASS_BUCKETS,
            registry=self.registry,
        )
        self.last_success = Gauge(
            f"{prefix}_last_success_timestamp_seconds",
            "When the last pass that finished ended (Unix time).",
            registry=self.registry,
        )
        self.leader = Gauge(
            f"{prefix}_leader",
            "1 while this replica works, 0 while it stands by (--leader-elect).",
            registry=self.registry,
        )
        # a replica that must win a lease first stands by until it has: its /metrics is up
        # while its first attempt runs, and must not say it works
        self.leader.set(0 if elected else 1)
        self._alive_since = clock()
        self._slowest_pass = 0.0
        for outcome in ("ok", "failed", "standby"):  # every series exists from the start
            self.passes.labels(outcome)

    def record_pass(self, succeeded: bool, seconds: float) -> None:
        self.passes.labels("ok" if succeeded else "failed").inc()
        self.pass_seconds.observe(seconds)
        if succeeded:  # a failing source's timeouts must not stretch the window
            self._slowest_pass = max(self._slowest_pass, seconds)
            self._alive_since = self.clock()
            self.last_success.set(self._alive_since)

    def record_activity(self) -> None:
        """Part of a pass finished (a chunk of history read): the service is not stuck, even
        when its first pass, reading a large cluster's whole history, outlasts the window."""
        self._alive_since = self.clock()

    def record_standby(self) -> None:
        """A pass skipped because another replica leads: a standby is healthy, not stuck."""
        self.passes.labels("standby").inc()
        self._alive_since = self.clock()

    def health(self) -> tuple[bool, str]:
        """(healthy, why) for /health-check: unhealthy only while the loop is stuck (a
        restart can cure that, not a dependency's outage: a restarted service would only
        re-read what it had); every dependency that is down is named below either way."""
        age = self.clock() - self._alive_since
        allowed = max(self.stale_after, SLOW_PASS_FACTOR * self._slowest_pass)
        down = self.dependencies.lines()
        if age <= allowed:
            return True, "\n".join(["ok", *down])
        return False, "\n".join(
            [f"no pass finished for {age:.0f}s (allowed {allowed:.0f}s)", *down]
        )

    def wsgi(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """GET /metrics (Prometheus text) and /health-check (200 or 500); 404 elsewhere."""
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return make_wsgi_app(self.registry)(environ, start_response)
        if path in ("/health-check", "/healthz"):
            healthy, why = self.health()
            start_response("200 OK" if healthy else "500 Internal Server Error", _text())
            return [f"{why}\n".encode()]
        start_response("404 Not Found", _text())
        return [b"try /metrics or /health-check\n"]


def _text() -> list[tuple[str, str]]:
    """Fresh headers each time: wsgiref appends Content-Length to the list it is given."""
    return [("Content-Type", "text/plain; charset=utf-8")]


class _QuietHandler(WSGIRequestHandler):
    """No access log line per scrape."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class TelemetryServer:
    """The telemetry endpoint on its own daemon thread; `port` is the bound one."""

    telemetry: ServiceTelemetry
    address: str = "0.0.0.0"
    requested_port: int = 0

    def __post_init__(self) -> None:
        # OSError (port in use, bad address) here, before the service starts its work
        self._server = make_server(
            self.address,
            self.requested_port,
            self.telemetry.wsgi,
            ThreadingWSGIServer,
            handler_class=_QuietHandler,
        )
        self.port: int = self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"tailor-{self.telemetry.component}-metrics"
        )
        self._thread.daemon = True

    def start(self) -> TelemetryServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()


# The outside services, as logs, metrics and /health-check name them.
API_SERVER = "api-server"
PROMETHEUS = "prometheus"


def outage(
    log: logging.Logger,
    telemetry: ServiceTelemetry | None,
    dependency: str,
    error: object,
    kept: str,
) -> None:
    """One error line for a pass a dependency ended: which, why, and what stays as it was."""
    log.error("%s unavailable: %s; kept: %s; retrying next pass", dependency, error, kept)
    if telemetry is not None:
        telemetry.dependencies.failed(dependency, f"{error}; kept: {kept}")


def answered(log: logging.Logger, telemetry: ServiceTelemetry | None, *dependencies: str) -> None:
    """The pass reached `dependencies`: a notice for each that was down until now."""
    if telemetry is None:
        return
    for dependency in dependencies:
        gone = telemetry.dependencies.answered(dependency)
        if gone is not None:
            log.info("%s answers again, after %.0fs down", dependency, gone)
