"""The service's history cache against a real Prometheus: a pass that reads only what is
new gives the frames a full read gives, and reads a full history only when it must."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.prometheus import (
    EmptyHistoryError,
    PrometheusSettings,
    load_prometheus_history,
)
from recommender.service.history_cache import HistoryCache
from tests.recommender.data.test_prometheus_server import STEP, History, build_history

pytestmark = pytest.mark.prometheus

ORDER = ["namespace", "pod", "container", "timestamp"]


@pytest.fixture(scope="module")
def written() -> History:
    return build_history()


@pytest.fixture(scope="module")
def url(prometheus_server: Any, written: History) -> str:
    text = usage_to_openmetrics(written.usage, written.events, extra_labels={"cluster": "prod"})
    return str(prometheus_server.start(text).url)


def sorted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(ORDER, kind="stable", ignore_index=True)


class Recording:
    """The real loader, noting the range of each read."""

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int]] = []

    def __call__(self, settings: PrometheusSettings, progress: Any, *, now: datetime) -> Any:
        self.ranges.append(settings.resolve_range(now))
        return load_prometheus_history(settings, progress, now=now)


def test_reading_only_what_is_new_gives_what_a_full_read_gives(url: str, written: History) -> None:
    settings = PrometheusSettings(url=url, history=timedelta(days=2), retries=0)
    loader = Recording()
    cache = HistoryCache(loader=loader)
    # the eviction (2 days in, minus a minute) falls in the windows the second pass reads again
    passes = [written.end - timedelta(hours=6, minutes=7), written.end - timedelta(hours=3),
              written.end]  # fmt: skip
    for now in passes:
        usage, events = cache.load(settings, now)
        full_usage, full_events = load_prometheus_history(settings, now=now)
        pd.testing.assert_frame_equal(sorted_frame(usage), sorted_frame(full_usage))
        pd.testing.assert_frame_equal(sorted_frame(events), sorted_frame(full_events))
    assert (cache.full_reads, cache.partial_reads) == (1, 2)
    first_end = loader.ranges[0][1]
    assert loader.ranges[1][0] == first_end - 2 * cache.overlap * STEP  # 8 windows, not 2 days
    assert set(events["reason"]) == {"OOMKilled", "Evicted"}


def test_other_namespaces_or_a_long_pause_mean_a_full_read(url: str, written: History) -> None:
    settings = PrometheusSettings(url=url, history=timedelta(days=1), retries=0)
    cache = HistoryCache()
    cache.load(settings, written.end - timedelta(hours=5))
    cache.load(
        settings.model_copy(update={"namespaces": ("teamxa",)}), written.end - timedelta(hours=4)
    )
    assert (cache.full_reads, cache.partial_reads) == (2, 0)
    usage, _ = cache.load(settings.model_copy(update={"namespaces": ("teamxa",)}), written.end)
    assert (cache.full_reads, cache.partial_reads) == (2, 1)
    assert set(usage["namespace"]) == {"teamxa"}
    with pytest.raises(EmptyHistoryError):  # the cached range is long gone: read in full
        cache.load(settings, written.end + timedelta(days=2))
    assert cache.full_reads == 3


def test_a_pass_folds_in_place_only_what_the_caller_let_go(url: str, written: History) -> None:
    settings = PrometheusSettings(url=url, history=timedelta(days=2), retries=0)
    cache = HistoryCache()
    held, _ = cache.load(settings, written.end - timedelta(hours=6))
    before = held.copy(deep=True)
    usage, _ = cache.load(settings, written.end - timedelta(hours=4))
    assert cache.in_place_folds == 0  # the caller still holds the last frame: a copy
    pd.testing.assert_frame_equal(held, before)
    del held, usage, before
    for hours in (2, 0):  # the caller lets go of each frame before the next pass
        now = written.end - timedelta(hours=hours)
        usage, events = cache.load(settings, now)
        full_usage, full_events = load_prometheus_history(settings, now=now)
        pd.testing.assert_frame_equal(sorted_frame(usage), sorted_frame(full_usage))
        pd.testing.assert_frame_equal(sorted_frame(events), sorted_frame(full_events))
        del usage, events, full_usage, full_events
    assert cache.in_place_folds == 2
