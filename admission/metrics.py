"""The webhook's own metrics: reviews by outcome and duration, cut connections, API reads.

Worker processes (`admission.workers`) cannot share prometheus_client objects with the
process that serves /metrics, so a worker records into a `Batch` that it sends to the
parent every fraction of a second; the parent replays it into `ReviewMetrics`. Both
offer the same three calls (`MetricsSink`), so the server does not know which it has.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import Counter, Histogram

from tailor.telemetry import ServiceTelemetry

# patched / unchanged / denied: decided; shed: answered unchanged at once, the worker
# being too far behind; timeout: answered unchanged when an API read outlasted the budget
REVIEW_OUTCOMES = ("patched", "unchanged", "denied", "bad_request", "shed", "timeout")
# granian closes slow-header and idle connections itself and does not say so (connections)
CLOSE_REASONS = ("body_timeout",)
API_OUTCOMES = ("ok", "failed", "breaker_open")


class MetricsSink(Protocol):
    def review(self, outcome: str, seconds: float) -> None: ...

    def connection_cut(self, reason: str) -> None: ...

    def api_read(self, outcome: str) -> None: ...


class ReviewMetrics:
    """Reviews answered, by outcome, and how long each took; connections cut; API reads."""

    def __init__(self, telemetry: ServiceTelemetry) -> None:
        registry = telemetry.registry
        self.reviews = Counter(
            "tailor_admission_reviews",
            "AdmissionReviews answered, by outcome (patched, unchanged, denied: a VPA refused, "
            "bad_request; shed: answered unchanged at once under overload; timeout: answered "
            "unchanged when an API read outlasted the review budget).",
            ["outcome"],
            registry=registry,
        )
        self.seconds = Histogram(
            "tailor_admission_review_duration_seconds",
            "Time from the request's headers to the answer.",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5),
            registry=registry,
        )
        self.cut = Counter(
            "tailor_admission_connections_cut",
            "Connections the webhook's handler closed, by reason (body_timeout: the body "
            "not in within its deadline).",
            ["reason"],
            registry=registry,
        )
        self.api = Counter(
            "tailor_admission_api_reads",
            "API reads made during a review (a controller not yet in the watch cache), by "
            "outcome (ok, failed: error or timeout, breaker_open: not attempted).",
            ["outcome"],
            registry=registry,
        )
        for outcome in REVIEW_OUTCOMES:
            self.reviews.labels(outcome)
        for reason in CLOSE_REASONS:
            self.cut.labels(reason)
        for outcome in API_OUTCOMES:
            self.api.labels(outcome)

    def review(self, outcome: str, seconds: float) -> None:
        self.reviews.labels(outcome).inc()
        self.seconds.observe(seconds)

    def connection_cut(self, reason: str) -> None:
        self.cut.labels(reason).inc()

    def api_read(self, outcome: str) -> None:
        self.api.labels(outcome).inc()


class Batch:
    """A worker's records since the last send: (kind, label, seconds) tuples."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, float]] = []

    def review(self, outcome: str, seconds: float) -> None:
        self.records.append(("review", outcome, seconds))

    def connection_cut(self, reason: str) -> None:
        self.records.append(("cut", reason, 0.0))

    def api_read(self, outcome: str) -> None:
        self.records.append(("api", outcome, 0.0))

    def take(self) -> list[tuple[str, str, float]]:
        taken, self.records = self.records, []
        return taken


def replay(records: list[tuple[str, str, float]], sink: MetricsSink) -> None:
    """A worker's batch recorded into the parent's metrics."""
    for kind, label, seconds in records:
        if kind == "review":
            sink.review(label, seconds)
        elif kind == "cut":
            sink.connection_cut(label)
        elif kind == "api":
            sink.api_read(label)
