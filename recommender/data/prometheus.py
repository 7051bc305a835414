"""Usage history from Prometheus (cAdvisor + kube-state-metrics) as canonical frames.

Unlike upstream VPA's Prometheus history (issue 9228: silently loads nothing), an
empty answer is an error naming the query, the range and the server, and an
unreachable server is a `PrometheusSourceError` carrying the URL.

Every query is a query_range on one grid aligned to `step` (UNIX-epoch
multiples), split into chunks of at most `chunk` so no series exceeds
Prometheus's 11,000-points limit; chunks share no grid point, and windows are
formed only after all chunks are joined, so chunking cannot change the result.
The queries run `concurrency` at a time, each answer is read as arrays
(`prometheus_matrix`) and goes straight onto a grid of containers x grid points
(`prometheus_grid`); the usage frame is cut from the grids at the end, its keys
categorical (`prometheus_assembly` says how CPU comes from the raw counter).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from datetime import UTC, datetime

import pandas as pd

from recommender.data.prometheus_assembly import SAMPLES, Answers, assemble
from recommender.data.prometheus_http import Fetcher, connect
from recommender.data.prometheus_matrix import Matrix
from recommender.data.prometheus_samples import SAMPLES_SPAN, samples_range
from recommender.data.prometheus_settings import (
    EmptyHistoryError,
    PrometheusSettings,
    PrometheusSourceError,
)
from recommender.data.promql import HistoryQueries, plan_chunks
from recommender.data.schema import THROTTLED_COLUMN as THROTTLED
from recommender.data.schema import DataFormatError, validate_events

__all__ = [
    "EmptyHistoryError",
    "PrometheusSettings",
    "PrometheusSourceError",
    "connect",
    "load_prometheus_history",
]
LOG = logging.getLogger(__name__)
Progress = Callable[[int, int], None]
Task = tuple[str, str, int, int]  # answer kind, query, first and last grid point


def query_plan(queries: HistoryQueries, start: int, end: int, chunk: int) -> list[Task]:
    """Every query of a load: the per-chunk ones, the counters' per piece of at most
    `SAMPLES_SPAN`, then the pods' owners over the range."""
    metrics = queries.metrics
    per_chunk: list[tuple[str, str]] = [
        ("memory", queries.memory_peak()),
        ("memory_stalled", queries.memory_stalled_share()),  # PSI, where the kubelet has it
        *(("requests", query) for query in queries.requests()),
        *(("limits", query) for query in queries.limits()),
        *(("restarts", query) for query in queries.restarts()),
        *(("oom", query) for query in queries.oom_killed()),
        ("evicted", queries.evicted()),
    ]
    step = queries.step
    chunks = plan_chunks(start, end, step, chunk)
    tasks = [(kind, query, first, last) for first, last in chunks for kind, query in per_chunk]
    piece = min(chunk, max(step, SAMPLES_SPAN // step * step))
    for first, last in (p for c in chunks for p in plan_chunks(*c, step, piece)):
        # cAdvisor exports throttling only under a CPU limit: elsewhere it stays NaN
        for metric, column in ((metrics.cpu_usage, "cpu"), (metrics.cpu_throttled, THROTTLED)):
            seconds = samples_range(first, last, step)
            tasks.append((column, queries.cpu_counter(metric), first, last))
            tasks.append((column + SAMPLES, queries.cpu_samples(seconds, metric), first, last))
    # one point per owner: the grid points' lookback saw samples up to 5 minutes before
    tasks.append(("owners", queries.owners(over=end - start + 300), end, end))
    return tasks


def fetch_one(fetcher: Fetcher, kind: str, query: str, first: int, last: int) -> Matrix:
    """One task of `query_plan`: a range query, or a counter's raw samples at its end."""
    if kind.endswith(SAMPLES):  # a range selector's raw samples, read at the piece's end
        return fetcher.samples(query, last)
    return fetcher.range_matrix(query, first, last)


def load_prometheus_history(
    settings: PrometheusSettings,
    progress: Progress | None = None,
    *,
    now: datetime | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(usage, events) in the canonical long format for the configured range.

    `progress(done, total)` is called after each query. Raises PrometheusSourceError
    if the server is unreachable, refuses a query, or holds no cpu or memory samples
    matching the selection.
    """
    start, end = settings.resolve_range(now)
    step = settings.step_seconds
    queries = settings.queries()
    tasks = query_plan(queries, start, end, int(settings.chunk.total_seconds()))
    answers = Answers(start, end, step, settings.names, settings.memory_pressure)
    client = connect(settings)
    fetcher = Fetcher(settings, client)
    pool = ThreadPoolExecutor(max_workers=settings.concurrency)
    try:
        running: dict[Future[Matrix], tuple[str, int, int]] = {
            pool.submit(fetch_one, fetcher, kind, query, first, last): (kind, first, last)
            for kind, query, first, last in tasks
        }
        for done, future in enumerate(as_completed(running), start=1):
            # dropped from `running` at once: a finished future holds its answer, and
            # every answer kept to the end was most of a load's memory
            kind, first, last = running.pop(future)
            answers.add(kind, future.result(), first, last)
            del future
            if progress is not None:
                progress(done, len(tasks))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        client.close()
    usage, events = assemble(answers)
    release_free_memory()
    if usage.empty:
        raise EmptyHistoryError(
            f"Prometheus at {settings.url} has no usage for {queries.cpu_counter()} and "
            f"{queries.memory_peak()} between {_iso(start)} and {_iso(end)}; check the metric "
            "and label names, the namespaces, the extra matchers and the range"
        )
    if not answers.state_matches(usage):
        LOG.warning(
            "Prometheus at %s has no kube-state-metrics series (%s, %s, ...) for the "
            "namespaces and pods of these containers: workloads are named after their pods, "
            "requests and OOM kills are unknown; if kube-state-metrics is scraped, check its "
            "metric and label names (state_labels.* and metrics.* of --prometheus-set)",
            settings.url,
            settings.names.metrics.pod_owner,
            settings.names.metrics.requests,
        )
    source = f"prometheus {settings.url}"
    try:
        return usage, validate_events(events, source)
    except DataFormatError as error:  # labels or values no cluster should export
        raise PrometheusSourceError(f"unusable history: {error}") from error


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim; elsewhere
    nothing). A load decodes thousands of answers in worker threads: the memory they
    freed stays in the threads' heaps (about 0.9 GB after a load of 10,000 containers,
    half the history's own size) and counted in the process's RSS until trimmed."""
    with contextlib.suppress(OSError, AttributeError, TypeError):  # no glibc: no trim
        ctypes.CDLL(None).malloc_trim(0)


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()
