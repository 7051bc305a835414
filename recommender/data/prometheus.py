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
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from recommender.data import prometheus_frames as frames
from recommender.data.prometheus_http import Fetcher, connect
from recommender.data.prometheus_settings import (
    EmptyHistoryError,
    PrometheusSettings,
    PrometheusSourceError,
)
from recommender.data.promql import (
    OWNER_LABELS,
    HistoryQueries,
    LabelNames,
    plan_chunks,
)
from recommender.data.schema import (
    THROTTLED_COLUMN,
    DataFormatError,
    validate_events,
    validate_usage,
)

__all__ = [
    "EmptyHistoryError",
    "PrometheusSettings",
    "PrometheusSourceError",
    "connect",
    "load_prometheus_history",
]
LOG = logging.getLogger(__name__)
Progress = Callable[[int, int], None]


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
        try:
            points = np.asarray(series["values"], dtype=object).reshape(-1, 2)
            stamps = np.rint(points[:, 0].astype(np.float64)).astype(np.int64)
            numbers = points[:, 1].astype(np.float64)  # Prometheus spells NaN and +Inf
        except (ValueError, TypeError) as error:
            raise PrometheusSourceError(
                f"a series of {series.get('metric')!r} is not a list of [time, value] pairs "
                f"({error})"
            ) from None
        for column, label in columns.items():
            value = series["metric"].get(label, "")
            if not isinstance(value, str):
                raise PrometheusSourceError(f"label {label} of {series['metric']!r} is not text")
            label_values[column].extend([value] * len(points))
        times.append(stamps)
        values.append(numbers)
    frame = pd.DataFrame(label_values, dtype=object)
    frame["time"] = np.concatenate(times)
    frame["value"] = np.concatenate(values)
    return frame


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
            _label_columns(names.state_labels, *OWNER_LABELS, per_container=False),
        ),
    }
    chunks = plan_chunks(start, end, step, int(settings.chunk.total_seconds()))
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in plan}
    client = connect(settings)
    fetcher = Fetcher(settings, client)
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
