"""Where and what the Prometheus source reads, and the errors it raises.

Kept apart from the loading code so a command can check its flags (durations, grid,
names, auth) into settings before any connection is made.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from recommender.data.promql import (
    MAX_POINTS_PER_SERIES,
    HistoryQueries,
    QueryNames,
    check_extra_matcher,
)
from tailor.memory_pressure import PressureRule
from tailor.names import NAME_RULES, shown

DEFAULT_CHUNK = timedelta(days=1)


def _not_too_long(value: str, kind: str) -> None:
    most = NAME_RULES[kind][1]
    if len(value) > most:
        raise ValueError(f"{shown(value)} is longer than a Kubernetes {kind} name ({most})")


_DURATION = TypeAdapter(timedelta)


class PrometheusSourceError(RuntimeError):
    """The history could not be loaded (server unreachable, query refused, no data)."""


class EmptyHistoryError(PrometheusSourceError):
    """The server answered, but holds no usage for the selection and range."""


class PrometheusSettings(BaseModel):
    """Where and what to read. Frozen: pass a new instance to change anything.

    The range is [start, end) when both are given; otherwise `end` defaults to now
    and `start` to end - `history`. Both are rounded down to multiples of `step`.
    `step` is the sample period of the result: cpu is the average over each step,
    memory the peak within it; it should not be shorter than the scrape (or
    backfill) interval. `chunk` bounds the range of one query; left unset it is
    one day, or the whole steps that fit Prometheus's 11,000 points when `step`
    is shorter than 8 s (so `step=5s` works without naming a chunk). `extra_matchers`
    (e.g. {"cluster": "prod"}) apply to every metric, cAdvisor and kube-state-metrics
    alike; one on `namespace` or `pod` is matched on each source's label holding the
    pod's namespace or name (`names.labels`, `names.state_labels`). There is no rate
    window: cpu comes from the raw counter (see `prometheus_frames`). The token,
    headers, TLS options, timeout and retries go to prometheus-api-client's session.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    start: datetime | None = None
    end: datetime | None = None
    history: timedelta = timedelta(days=8)
    step: timedelta = timedelta(minutes=5)
    chunk: timedelta = DEFAULT_CHUNK
    namespaces: tuple[str, ...] = ()
    names: QueryNames = QueryNames()
    extra_matchers: dict[str, str] = Field(default_factory=dict)
    bearer_token: SecretStr | None = None
    username: str | None = None  # basic auth (upstream's --username / --password)
    password: SecretStr | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    verify_tls: bool = True
    ca_file: Path | None = None
    # a client certificate and key (PEM files): the API server's service proxy, reached
    # with a kubeconfig's credentials (`tailor recommend` on a cluster)
    client_cert_file: Path | None = None
    client_key_file: Path | None = None
    timeout_seconds: float = 60.0
    retries: int = Field(default=3, ge=0)
    concurrency: int = Field(default=4, ge=1, le=32)  # queries in flight at once
    # gzip the answers: Prometheus and the reader spend several times the CPU of the
    # answer itself on it (`prometheus_http.Fetcher`); worth it only over a slow link
    compressed: bool = False
    # what a sustained-pressure episode is (read back as an OOM-like event): the updater's rule
    memory_pressure: PressureRule = PressureRule()

    @model_validator(mode="before")
    @classmethod
    def _default_chunk(cls, data: Any) -> Any:
        """An unset chunk that the step allows; an explicit one is validated as given."""
        if not isinstance(data, dict) or data.get("chunk") is not None:
            return data
        try:
            step = _DURATION.validate_python(data.get("step", cls.model_fields["step"].default))
        except ValidationError:
            return data  # the field's own validation reports it
        seconds = step.total_seconds()
        if seconds < 1 or not seconds.is_integer():
            return data
        points = max(1, min(DEFAULT_CHUNK.total_seconds() // seconds, MAX_POINTS_PER_SERIES))
        return {**data, "chunk": timedelta(seconds=points * seconds)}

    @model_validator(mode="after")
    def _one_way_in(self) -> PrometheusSettings:
        """Basic auth needs both halves, and it and a bearer token would fight over the
        one Authorization header."""
        if (self.username is None) != (self.password is None):
            raise ValueError("basic auth needs both a username and a password")
        if self.username is not None and self.bearer_token is not None:
            raise ValueError("use basic auth or a bearer token, not both")
        return self

    @model_validator(mode="after")
    def _matcher_names(self) -> PrometheusSettings:
        """Matchers on labels the queries allow; a namespace or pod matched by name no longer
        than Kubernetes allows (a 2 MB value is refused, not sent). Their characters are
        left to Prometheus: a relabelled source may hold values no API server would."""
        most = {}
        for labels in (self.names.labels, self.names.state_labels):
            most.update({labels.namespace: "namespace", labels.pod: "pod"})
        for name, value in self.extra_matchers.items():
            check_extra_matcher(name, self.names)
            if name in most:
                _not_too_long(value, most[name])
        for namespace in self.namespaces:
            _not_too_long(namespace, "namespace")
        return self

    @field_validator("start", "end")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("start/end must be timezone-aware (e.g. UTC)")
        return value

    @model_validator(mode="after")
    def _grid(self) -> PrometheusSettings:
        step = self.step.total_seconds()
        chunk = self.chunk.total_seconds()
        if step < 1 or not step.is_integer():
            raise ValueError(f"step must be a whole number of seconds >= 1, got {self.step}")
        if self.start is None and self.history.total_seconds() < step:
            raise ValueError(f"history ({self.history}) must span at least one step ({self.step})")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"end ({self.end}) must come after start ({self.start})")
        if chunk < step or chunk % step:
            raise ValueError(f"chunk ({self.chunk}) must be a multiple of step ({self.step})")
        if chunk / step > MAX_POINTS_PER_SERIES:
            raise ValueError(
                f"chunk/step = {chunk / step:.0f} points exceeds Prometheus's "
                f"{MAX_POINTS_PER_SERIES} points per series; use a shorter chunk"
            )
        return self

    @property
    def step_seconds(self) -> int:
        return int(self.step.total_seconds())

    def resolve_range(self, now: datetime | None = None) -> tuple[int, int]:
        """[start, end) as UNIX seconds on the step grid."""
        step = self.step_seconds
        end_time = self.end or now or datetime.now(UTC)
        start_time = self.start or end_time - self.history
        end = math.floor(end_time.timestamp() / step) * step
        start = math.floor(start_time.timestamp() / step) * step
        if end <= start:
            raise ValueError(
                f"empty history range: start {start_time} is not before end {end_time}"
            )
        return start, end

    def queries(self) -> HistoryQueries:
        return HistoryQueries.build(
            self.names, self.step_seconds, self.namespaces, self.extra_matchers
        )
