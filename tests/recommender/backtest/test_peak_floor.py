"""The trailing-peak memory floor: certified against brute force, and its forgetting time."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from recommender.backtest.peak_floor import forgetting_window, trailing_peak_floor


def _slack(limit: np.ndarray, usage: np.ndarray) -> float:
    return float(np.sum(np.maximum(limit - usage, 0.0)) / np.sum(limit))


def _floor_by_loop(usage: np.ndarray, window: int) -> np.ndarray:
    """Each window's floor: the peak of the `window` windows before it (0 with none)."""
    return np.array([usage[max(t - window, 0) : t].max(initial=0.0) for t in range(len(usage))])


def test_a_short_series_by_hand() -> None:
    usage = np.array([[1.0, 10.0, 1.0, 1.0]])
    # limits 1, 10, 10 (the peak a window ago), 1 (forgotten): slack 9 of 22
    floor = trailing_peak_floor(usage, np.array([0]), window=1)
    assert floor.relative_slack == pytest.approx(9 / 22)
    assert floor.windows == 4
    # two windows of memory hold the peak once more
    assert trailing_peak_floor(usage, np.array([0]), 2).relative_slack == pytest.approx(18 / 31)


def test_no_limit_above_the_floor_leaves_less_slack() -> None:
    rng = np.random.default_rng(7)
    usage = rng.gamma(0.6, 2.0, size=60)
    floor = _floor_by_loop(usage, 5)
    best = trailing_peak_floor(usage[None, :], np.array([0]), 5).relative_slack
    assert best == pytest.approx(_slack(np.maximum(floor, usage), usage))
    for _ in range(2_000):
        # limits anywhere on or above the floor, under usage (a kill) or over it
        limit = floor + rng.uniform(0.0, 1.0, size=60) * rng.choice([0.0, 0.5, 3.0], size=60)
        assert _slack(limit, usage) >= best - 1e-12


def test_longer_memory_never_leaves_less() -> None:
    rng = np.random.default_rng(3)
    usage = rng.lognormal(0.0, 1.0, size=(3, 200))
    figures = [
        trailing_peak_floor(usage, np.array([10, 0, 50]), w).relative_slack for w in range(1, 60)
    ]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(figures))
    assert figures[-1] > figures[0]


def test_the_warm_up_is_remembered_and_gaps_are_not_scored() -> None:
    usage = np.array([[8.0, 1.0, np.nan, 1.0, 1.0]])
    # evaluated from window 1: the warm-up's 8 still binds with 3 windows of memory
    floor = trailing_peak_floor(usage, np.array([1]), 3)
    assert floor.windows == 3
    assert floor.relative_slack == pytest.approx(14 / 17)  # limits 8, 8, 1 over usage 1, 1, 1


def test_the_forgetting_window_is_the_longest_memory_that_meets_the_goal() -> None:
    rng = np.random.default_rng(11)
    usage = rng.gamma(0.5, 1.0, size=(2, 300))
    start = np.array([20, 20])
    goal = trailing_peak_floor(usage, start, 12).relative_slack
    longest = forgetting_window(usage, start, goal)
    assert longest is not None
    assert longest >= 12
    assert trailing_peak_floor(usage, start, longest).relative_slack <= goal
    assert trailing_peak_floor(usage, start, longest + 1).relative_slack > goal
    assert forgetting_window(usage, start, 0.0) == 0
    assert forgetting_window(usage, start, 1.0) is None  # nothing need be forgotten


def test_nonsense_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one window"):
        trailing_peak_floor(np.ones((1, 4)), np.array([0]), 0)
    with pytest.raises(ValueError, match="no evaluated memory"):
        trailing_peak_floor(np.ones((1, 4)), np.array([4]), 1)
