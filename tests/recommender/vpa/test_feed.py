"""The model's feed read off a history sorted by series gives exactly the rows, chunks and
model state that sorting the history by time gives."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.vpa.feed import SeriesSorted, TimeSorted
from recommender.vpa.ingest import group_by_series
from recommender.vpa.model import VpaModel

MIDNIGHT = 19675 * 86400
STEP = 300


def history(seed: int, grid: int = STEP) -> tuple[np.ndarray, ...]:
    """Series sorted by series and time: gaps, a late start, an early end, a series with
    one row, two rows at one time, and (grid 1) times off any grid."""
    rng = np.random.default_rng(seed)
    series, seconds = [], []
    for number in range(9):
        slots = np.arange(rng.integers(0, 20), rng.integers(30, 60))
        slots = slots[rng.random(slots.size) > 0.2] if number % 3 == 0 else slots
        times = MIDNIGHT + slots * grid + (rng.integers(0, 7, slots.size) if grid == 1 else 0)
        if number == 4:
            times = times[:1]
        if number == 5:
            times = np.sort(np.append(times, times[3]))  # a duplicate time
        series.append(np.full(times.size, number))
        seconds.append(np.sort(times))
    rows = sum(part.size for part in series)
    return (
        np.concatenate(series).astype(np.int64),
        np.concatenate(seconds).astype(np.int64),
        rng.random(rows) * 2,
        np.where(rng.random(rows) < 0.1, np.nan, rng.random(rows) * 1e9),
    )


def grouped(chunk: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    order = group_by_series(chunk[0])
    return [column if order is None else column[order] for column in chunk]


@pytest.mark.parametrize("grid", [STEP, 1])
@pytest.mark.parametrize("size", [1, 7, 40, 10_000])
def test_chunks_are_the_time_sorts_grouped_by_series(grid: int, size: int) -> None:
    columns = history(seed=grid + size, grid=grid)
    fed, sorted_ = SeriesSorted.of(*columns), TimeSorted.of(*columns)
    assert fed is not None
    assert fed.rows == sorted_.rows and fed.span == sorted_.span
    for begin, end in [(0, fed.rows), (3, fed.rows - 5), (size, 2 * size + 1)]:
        ours = list(fed.chunks(begin, end, size))
        theirs = list(sorted_.chunks(begin, end, size))
        assert len(ours) == len(theirs)
        for mine, sorts in zip(ours, theirs, strict=True):
            for column, expected in zip(mine, grouped(sorts), strict=True):
                np.testing.assert_array_equal(column, expected)
    asked = np.array([MIDNIGHT - 1, MIDNIGHT, MIDNIGHT + 7 * grid + 3, MIDNIGHT + 10**6])
    np.testing.assert_array_equal(fed.rows_until(asked), sorted_.rows_until(asked))


def test_series_with_a_row_at_every_slot_need_no_search() -> None:
    series = np.repeat(np.arange(4), 25)
    seconds = MIDNIGHT + STEP * np.tile(np.arange(25), 4)
    cpu, memory = np.linspace(0.1, 2, 100), np.linspace(1e8, 2e9, 100)
    fed, sorted_ = (
        SeriesSorted.of(series, seconds, cpu, memory),
        TimeSorted.of(series, seconds, cpu, memory),
    )
    assert fed is not None and fed.key is None  # every series dense
    for mine, sorts in zip(fed.chunks(5, 97, 9), sorted_.chunks(5, 97, 9), strict=True):
        for column, expected in zip(mine, grouped(sorts), strict=True):
            np.testing.assert_array_equal(column, expected)


def test_a_history_not_sorted_by_series_and_time_is_left_to_the_sort() -> None:
    series, seconds, cpu, memory = history(seed=1)
    backwards = seconds.copy()
    backwards[[2, 3]] = backwards[[3, 2]]
    assert SeriesSorted.of(series, backwards, cpu, memory) is None
    assert SeriesSorted.of(series[::-1].copy(), seconds, cpu, memory) is None
    assert SeriesSorted.of(series + 1, seconds, cpu, memory) is None  # series 0 has no rows


def test_the_model_fed_from_the_runs_is_the_one_fed_in_time_order() -> None:
    columns = history(seed=3)
    states = []
    for feed in (SeriesSorted.of(*columns), TimeSorted.of(*columns)):
        assert feed is not None
        model = VpaModel(np.array([0, 0, 1, 1, 2, 2, 3, 3, 4]))
        for begin, end in [(0, 50), (50, feed.rows)]:
            model.add_chunks(feed.chunks(begin, end, 16), end - begin > 16)
        states.append(model)
    ours, theirs = states
    for name in ("cpu", "memory"):
        np.testing.assert_array_equal(getattr(ours, name).weights, getattr(theirs, name).weights)
        np.testing.assert_array_equal(getattr(ours, name).total, getattr(theirs, name).total)
    np.testing.assert_array_equal(ours.sample_count, theirs.sample_count)
    np.testing.assert_array_equal(ours.peaks.usage_peak, theirs.peaks.usage_peak)
    assert ours.sample_count.sum() > 0
