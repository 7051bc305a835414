"""Each container's memory pressure now, from Prometheus (the updater's edge).

Two queries at one instant: the PSI `full` share averaged over the rule's window
(`HistoryQueries.memory_stalled_share`) and the peak working set over the same window.
The settings are the history source's (URL, names, matchers, auth), so a Prometheus the
recommender reads is read the same way here.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from recommender.data.prometheus_grid import label_values
from recommender.data.prometheus_http import Fetcher, connect
from recommender.data.prometheus_matrix import Matrix
from recommender.data.prometheus_settings import PrometheusSettings
from tailor.memory_pressure import PressureReading, PressureRule

ContainerKey = tuple[str, str, str]  # namespace, pod, container


def _last_values(matrix: Matrix, keys: tuple[str, str, str]) -> dict[ContainerKey, float]:
    """Each container's last value; the largest where several series carry one container
    (two scrape jobs: the queries leave the collapsing to the reader)."""
    columns = [label_values(matrix, label) for label in keys]
    found: dict[ContainerKey, float] = {}
    for i, key in enumerate(zip(*columns, strict=True)):
        start, end = int(matrix.offsets[i]), int(matrix.offsets[i + 1])
        if end > start:
            value = float(matrix.values[end - 1])
            found[key] = value if math.isnan(found.get(key, math.nan)) else max(found[key], value)
    return found


def read_memory_pressure(
    settings: PrometheusSettings, rule: PressureRule, now: datetime | None = None
) -> dict[ContainerKey, PressureReading]:
    """(namespace, pod, container) -> its stalled share and peak working set over the
    rule's window ending `now`; containers without PSI series are absent. Raises
    PrometheusSourceError when Prometheus cannot be read."""
    at = math.floor((now or datetime.now(UTC)).timestamp())
    queries = settings.queries()
    labels = settings.names.labels
    keys = (labels.namespace, labels.pod, labels.container)
    client = connect(settings)
    try:
        fetcher = Fetcher(settings, client)
        shares = fetcher.range_matrix(queries.memory_stalled_share(rule.window_seconds), at, at)
        peaks = fetcher.range_matrix(queries.working_set_peak(rule.window_seconds), at, at)
    finally:
        client.close()
    working_sets = _last_values(peaks, keys)
    return {
        key: PressureReading(share, working_sets.get(key, math.nan))
        for key, share in _last_values(shares, keys).items()
    }
