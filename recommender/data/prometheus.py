"""Usage history from Prometheus (cAdvisor + kube-state-metrics) as canonical frames.

Unlike upstream VPA's Prometheus history (issue 9228: silently loads nothing), an
empty answer is an error naming the query, the range and the server, and an
unreachable server is a `PrometheusSourceError` carrying the URL.

Every query is a query_range on one grid aligned to `step` (UNIX-epoch
multiples), split into chunks of at most `chunk` so no series exceeds
Prometheus's 11,000-points limit; chunks share no grid point, and windows are
formed only after all chunks are joined, so chunking cannot change the result.
See `prometheus_frames` for why CPU is computed from the raw counter.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
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
from urllib3.util.retry import Retry

from recommender.data import prometheus_frames as frames
from recommender.data.promql import (
    MAX_POINTS_PER_SERIES,
    HistoryQueries,
    LabelNames,
    QueryNames,
    check_extra_matcher,
    plan_chunks,
)
from recommender.data.schema import (
    THROTTLED_COLUMN,
    DataFormatError,
    validate_events,
    validate_usage,
)

LOG = logging.getLogger(__name__)
Progress = Callable[[int, int], None]
DEFAULT_CHUNK = timedelta(days=1)
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
    alike. There is no rate window: cpu comes from the raw counter (see
    `prometheus_frames`). The token, headers, TLS options, timeout and retries go
    to prometheus-api-client's session.
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
    headers: dict[str, str] = Field(default_factory=dict)
    verify_tls: bool = True
    ca_file: Path | None = None
    timeout_seconds: float = 60.0
    retries: int = Field(default=3, ge=0)

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
        points = min(DEFAULT_CHUNK.total_seconds() // seconds, MAX_POINTS_PER_SERIES)
        return {**data, "chunk": timedelta(seconds=points * seconds)}

    @model_validator(mode="after")
    def _matcher_names(self) -> PrometheusSettings:
        for name in self.extra_matchers:
            check_extra_matcher(name, self.names)
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
        if chunk % step:
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


def connect(settings: PrometheusSettings) -> PrometheusConnect:
    """A prometheus-api-client connection with the settings' auth, TLS and retries."""
    session = requests.Session()
    session.verify = str(settings.ca_file) if settings.ca_file else settings.verify_tls
    headers = dict(settings.headers)
    if settings.bearer_token is not None:
        headers["Authorization"] = f"Bearer {settings.bearer_token.get_secret_value()}"
    retry = Retry(
        total=settings.retries,
        backoff_factor=0.5,
        status_forcelist=[429, 502, 503, 504],
        allowed_methods=["GET"],
    )
    return PrometheusConnect(
        url=settings.url.rstrip("/"),
        headers=headers or None,
        retry=retry,
        session=session,
        timeout=settings.timeout_seconds,
    )


def _label_columns(labels: LabelNames, *names: str, per_container: bool = True) -> dict[str, str]:
    """Output column -> Prometheus label: the key columns, then `names` as they are."""
    mapping = {"namespace": labels.namespace, "pod": labels.pod}
    if per_container:
        mapping["container"] = labels.container
    return {**mapping, **{name: name for name in names}}


def _to_samples(result: list[dict], columns: dict[str, str]) -> pd.DataFrame:
    """query_range JSON result -> samples frame (label columns, time, value)."""
    if not result:
        return frames.samples_frame(list(columns))
    label_values: dict[str, list[str]] = {column: [] for column in columns}
    times: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for series in result:
        points = np.asarray(series["values"], dtype=object)
        for column, label in columns.items():
            label_values[column].extend([series["metric"].get(label, "")] * len(points))
        times.append(np.rint(points[:, 0].astype(np.float64)).astype(np.int64))
        values.append(points[:, 1].astype(np.float64))
    frame = pd.DataFrame(label_values, dtype=object)
    frame["time"] = np.concatenate(times)
    frame["value"] = np.concatenate(values)
    return frame


class _Fetcher:
    """Runs each query chunk by chunk and keeps the concatenated samples."""

    def __init__(self, settings: PrometheusSettings, client: PrometheusConnect) -> None:
        self.settings = settings
        self.client = client

    def range_query(self, query: str, first: int, last: int) -> list[dict]:
        url = self.settings.url
        try:
            result = self.client.custom_query_range(
                query,
                start_time=datetime.fromtimestamp(first, UTC),
                end_time=datetime.fromtimestamp(last, UTC),
                step=str(self.settings.step_seconds),
            )
        except (requests.exceptions.JSONDecodeError, KeyError, TypeError) as error:
            raise _not_prometheus(url, f"{type(error).__name__}: {error}") from error
        except requests.exceptions.RequestException as error:
            raise PrometheusSourceError(f"cannot reach Prometheus at {url}: {error}") from error
        except PrometheusApiClientException as error:
            raise PrometheusSourceError(
                f"Prometheus at {url} refused query {query!r}: {error}"
            ) from error
        if not isinstance(result, list) or not all(_is_series(item) for item in result):
            raise _not_prometheus(url, f"no range-query matrix in {str(result)[:200]!r}")
        return result


def _is_series(item: object) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("metric"), dict)
        and isinstance(item.get("values"), list)
    )


def _not_prometheus(url: str, detail: str) -> PrometheusSourceError:
    """A server that answers, but not with Prometheus's HTTP API: usually a wrong URL
    (a Grafana or web UI page, a proxy's landing page) rather than a broken Prometheus."""
    return PrometheusSourceError(
        f"{url} does not answer like a Prometheus server ({detail}); --prometheus wants "
        "the base URL of Prometheus's HTTP API, e.g. http://prometheus:9090"
    )


def load_prometheus_history(
    settings: PrometheusSettings,
    progress: Progress | None = None,
    *,
    now: datetime | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(usage, events) in the canonical long format for the configured range.

    `progress(done, total)` is called after each chunk. Raises
    PrometheusSourceError if the server is unreachable, refuses a query, or holds
    no cpu or memory samples matching the selection.
    """
    start, end = settings.resolve_range(now)
    step = settings.step_seconds
    queries = settings.queries()
    names = settings.names
    keys = _label_columns(names.labels)
    state_keys = _label_columns(names.state_labels)
    plan = {
        **_counter_plan(queries, names.metrics.cpu_usage, "cpu", keys),
        # cAdvisor exports throttling only under a CPU limit: elsewhere it stays NaN
        **_counter_plan(queries, names.metrics.cpu_throttled, THROTTLED_COLUMN, keys),
        "memory": (queries.memory_peak(), keys),
        "requests": (queries.requests(), _label_columns(names.state_labels, "resource")),
        "limits": (queries.limits(), _label_columns(names.state_labels, "resource")),
        "restarts": (queries.restarts(), state_keys),
        "oom": (queries.oom_killed(), state_keys),
        "evicted": (queries.evicted(), _label_columns(names.state_labels, per_container=False)),
        "owners": (
            queries.owners(),
            _label_columns(names.state_labels, "owner_kind", "owner_name", per_container=False),
        ),
    }
    chunks = plan_chunks(start, end, step, int(settings.chunk.total_seconds()))
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in plan}
    client = connect(settings)
    fetcher = _Fetcher(settings, client)
    try:
        for done, (first, last) in enumerate(chunks, start=1):
            for name, (query, columns) in plan.items():
                result = fetcher.range_query(query, first, last)
                parts[name].append(_to_samples(result, columns))
            if progress is not None:
                progress(done, len(chunks))
    finally:
        client.close()
    samples = {
        name: pd.concat(chunk_parts, ignore_index=True) for name, chunk_parts in parts.items()
    }
    usage, events = _assemble(samples, start, end, step)
    if usage.empty:
        raise EmptyHistoryError(
            f"Prometheus at {settings.url} has no usage for {queries.cpu_counter()} and "
            f"{queries.memory_peak()} between {_iso(start)} and {_iso(end)}; check the metric "
            "and label names, the namespaces, the extra matchers and the range"
        )
    if not usage.empty and not _state_matches(usage, samples):
        LOG.warning(
            "Prometheus at %s has no kube-state-metrics series (%s, %s, ...) for the "
            "namespaces and pods of these containers: workloads are named after their pods, "
            "requests and OOM kills are unknown; if kube-state-metrics is scraped, check its "
            "metric and label names (state_labels.* and metrics.* of --prometheus-set)",
            settings.url,
            names.metrics.pod_owner,
            names.metrics.requests,
        )
    source = f"prometheus {settings.url}"
    try:
        return validate_usage(usage, source), validate_events(events, source)
    except DataFormatError as error:  # labels or values no cluster should export
        raise PrometheusSourceError(f"unusable history: {error}") from error


def _assemble(
    samples: dict[str, pd.DataFrame], start: int, end: int, step: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    cpu = _counter_windows(samples, "cpu", step)
    memory = frames.memory_windows(samples["memory"], step)
    resources = frames.resource_columns(samples["requests"], samples["limits"])
    throttled = _counter_windows(samples, THROTTLED_COLUMN, step)
    usage = frames.usage_frame(
        cpu, memory, resources, samples["owners"], start, end, throttled=throttled
    )
    events = frames.combine_events(
        frames.oom_events(samples["restarts"], samples["oom"], resources, memory, step),
        frames.eviction_events(samples["evicted"], memory, start, step),
    )
    events = frames.with_workloads(events, samples["owners"])
    LOG.info("loaded %d usage rows and %d events from Prometheus", len(usage), len(events))
    return usage, events


def _state_matches(usage: pd.DataFrame, samples: dict[str, pd.DataFrame]) -> bool:
    """Whether any kube-state-metrics series names a pod the usage has. A scrape without
    honor_labels still yields series, keyed by the scrape target's own namespace and pod."""
    pods = set(zip(usage["namespace"], usage["pod"], strict=True))
    for name in ("owners", "requests", "restarts"):
        frame = samples[name]
        if not pods.isdisjoint(zip(frame["namespace"], frame["pod"], strict=True)):
            return True
    return False


def _counter_plan(
    queries: HistoryQueries, metric: str, column: str, keys: dict[str, str]
) -> dict[str, tuple[str, dict[str, str]]]:
    """The four queries a CPU-seconds counter is read with (`frames.cpu_windows`)."""
    return {
        column: (queries.cpu_counter(metric), keys),
        f"{column}_at": (queries.cpu_counter_time(metric), keys),
        f"{column}_resets": (queries.cpu_resets(metric), keys),
        f"{column}_low": (queries.cpu_low(metric), keys),
    }


def _counter_windows(samples: dict[str, pd.DataFrame], column: str, step: int) -> pd.DataFrame:
    """Cores per window of the counter `_counter_plan` read into `column`."""
    return frames.cpu_windows(
        samples[column],
        samples[f"{column}_at"],
        step,
        samples[f"{column}_resets"],
        samples[f"{column}_low"],
        column=column,
    )


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()
