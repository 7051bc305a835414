"""The hindsight slack bound on cases small enough to check by hand or by enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from recommender.backtest import BacktestInputError, ExecutionSettings, run_backtest
from recommender.backtest.hindsight import (
    DayUsage,
    Resource,
    budget_from_rate,
    container_days,
    exempt_count,
    slack_lower_bound,
)
from recommender.backtest.history import prepare_history
from tests.recommender.backtest.helpers import GIB, PER_DAY, days, fixed_spec, history

TWO_LEVELS = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]


def day_usage(*rows: list[float]) -> DayUsage:
    """Every row one full, counted day of len(row) windows (NaN = not evaluated)."""
    usage = np.asarray(rows, dtype=np.float64)
    covered = np.full(len(rows), usage.shape[1])
    return DayUsage(usage, covered, covered, np.ones(len(rows), dtype=bool), 300)


def bound(days: DayUsage, budget: float, changes: int, exempt: float = 0.0) -> float:
    return slack_lower_bound(days, budget, changes, exempt).bound


def brute_force(usage: np.ndarray, budget: int, changes: int) -> float:
    """The least slack / request over requests with <= `changes` changes and <= budget shortfalls.

    Levels go beyond the DP's candidates (midpoints, above the peak), so the DP's
    claim that {0} and the usage values suffice is tested, not assumed.
    """
    valid = ~np.isnan(usage)
    values = np.unique(usage[valid])
    levels = np.unique(np.concatenate([[0.0], values, (values[1:] + values[:-1]) / 2, [9.0]]))
    best = np.inf
    for cuts in range(changes + 1):
        for starts in itertools.combinations(range(1, usage.size), cuts):
            bounds = (0, *starts, usage.size)
            for choice in itertools.product(levels, repeat=cuts + 1):
                request = np.repeat(choice, np.diff(bounds))[valid]
                used = usage[valid]
                if (used > request).sum() > budget or request.sum() <= 0:
                    continue
                best = min(best, np.maximum(request - used, 0).sum() / request.sum())
    return float(best)


def test_constant_usage_needs_no_slack() -> None:
    flat = day_usage([0.7] * 6, [0.7] * 6)
    assert bound(flat, 0, 0) == 0.0
    assert bound(flat, 3, 6, 0.01) == 0.0


def test_two_levels_one_change_fits_exactly() -> None:
    assert bound(day_usage(TWO_LEVELS), 0, 1) == 0.0


def test_a_cap_above_one_change_per_window_is_no_cap() -> None:
    # it used to size the DP's state by the cap: a MemoryError for 10**15
    assert bound(day_usage(TWO_LEVELS), 0, 10**15) == 0.0
    assert bound(day_usage(TWO_LEVELS, [2.0, 1.0, 2.0, 1.0, 2.0, 1.0]), 0, 10**15) == 0.0


def test_a_cap_past_any_float_is_no_cap() -> None:
    assert bound(day_usage(TWO_LEVELS, TWO_LEVELS[::-1]), 0, 10**400) == 0.0  # overflowed


@pytest.mark.parametrize(
    ("budget", "changes", "exempt", "setting"),
    [
        (-1.0, 1, 0.0, "budget must be a finite number"),
        (math.inf, 1, 0.0, "budget must be a finite number"),
        (math.nan, 1, 0.0, "budget must be a finite number"),
        (0.0, -1, 0.0, "changes_per_day must be"),
        (0.0, math.inf, 0.0, "changes_per_day must be"),
        (0.0, math.nan, 0.0, "changes_per_day must be"),
        (0.0, 1, 0.6, r"exempt_fraction must be in \[0, 0.5\]"),
        (0.0, 1, -0.1, "exempt_fraction must be"),
        (0.0, 1, math.nan, "exempt_fraction must be"),
    ],
)
def test_limits_out_of_range_are_refused_by_the_library(
    budget: float, changes: float, exempt: float, setting: str
) -> None:
    """Only the CLI checked them; a notebook got a bound for limits that mean nothing."""
    with pytest.raises(BacktestInputError, match=setting):
        slack_lower_bound(day_usage(TWO_LEVELS), budget, changes, exempt)  # type: ignore[arg-type]


@pytest.mark.parametrize("resource", ["cpu", "memory"])
@pytest.mark.parametrize("rate", [math.inf, math.nan, -0.5])
def test_a_budget_rate_must_be_a_finite_count(resource: Resource, rate: float) -> None:
    with pytest.raises(BacktestInputError, match="a budget rate must be a finite number"):
        budget_from_rate(day_usage(TWO_LEVELS), resource, rate)


def test_two_levels_without_changes_must_cover_the_peak() -> None:
    # request 2 throughout: slack 3 of 12
    assert bound(day_usage(TWO_LEVELS), 0, 0) == pytest.approx(0.25, abs=1e-5)
    assert bound(day_usage(TWO_LEVELS), 0, 0) < 0.25


def test_two_levels_with_a_budget_gives_the_dual_bound() -> None:
    # B = 2 < 3 shortfalls of request 1, so request 2 (ratio 1/4) is the true optimum;
    # the Lagrange dual mixes requests 1 and 2 (2/3 : 1/3) and certifies only 1/8.
    assert bound(day_usage(TWO_LEVELS), 2, 0) == pytest.approx(0.125, abs=1e-3)
    # over four such days half can fall short: the mix is integral and the bound tight
    assert bound(day_usage(*[TWO_LEVELS] * 4), 6, 0) == pytest.approx(1 / 6, abs=1e-3)
    assert bound(day_usage(TWO_LEVELS), 3, 0) == 0.0  # request 1 everywhere: no slack


@pytest.mark.parametrize("seed", range(12))
def test_never_above_the_enumerated_optimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    usage = np.round(rng.gamma(2.0, 0.5, 6), 2)
    if seed % 3 == 0:
        usage[rng.integers(6)] = np.nan  # a missing sample costs nothing at any level
    for changes, budget in itertools.product((0, 1), (0, 1, 2)):
        truth = brute_force(usage, budget, changes)
        found = bound(day_usage(list(usage)), budget, changes)
        assert found <= truth + 1e-12
        if budget == 0:  # no multiplier, so no duality gap: Dinkelbach finds the optimum
            assert found == pytest.approx(truth, abs=1e-4)


def test_more_budget_never_raises_the_bound() -> None:
    rng = np.random.default_rng(7)
    week = day_usage(*rng.gamma(2.0, 0.5, (7, 24)).tolist())
    found = [bound(week, budget, 2) for budget in (0, 3, 10, 40, 167, 168)]
    assert all(a >= b - 1e-3 for a, b in itertools.pairwise(found))
    assert found[0] > found[2] > 0
    assert found[-1] == 0.0  # every window may fall short: requests of zero


def test_exempt_days_get_request_equal_to_usage() -> None:
    # without exemption: requests 3 and 2, slack (6 + 3) / (18 + 12) = 0.3; exempting
    # the first day (request = usage, 12) leaves 3 / (12 + 12), the second 6 / (18 + 9)
    pair = day_usage([1, 1, 1, 3, 3, 3], [1, 2, 1, 2, 1, 2])
    assert bound(pair, 0, 0) == pytest.approx(0.3, abs=1e-5)
    assert bound(pair, 0, 0, exempt=0.5) == pytest.approx(3 / 24, abs=1e-5)


def test_uncounted_days_are_free() -> None:
    pair = day_usage([1, 1, 1, 3, 3, 3], [1, 2, 1, 2, 1, 2])
    free_first = DayUsage(pair.usage, pair.covered, pair.span, np.array([False, True]), 300)
    assert bound(free_first, 0, 0) == pytest.approx(3 / 24, abs=1e-5)


def test_partial_day_changes_are_scaled_to_a_full_day() -> None:
    # 4 of 8 windows evaluated: 2 changes a day allow only 1 on this day
    steps = DayUsage(np.array([[1.0, 2.0, 3.0, 4.0] + [np.nan] * 4]), np.array([4]),
                     np.array([4]), np.array([True]), 300)  # fmt: skip
    one_change = day_usage([1.0, 2.0, 3.0, 4.0])
    assert bound(steps, 0, 2) == pytest.approx(bound(one_change, 0, 1), abs=1e-5)
    assert bound(one_change, 0, 1) > 0.1


def test_exempt_count_matches_the_p99_of_numpy() -> None:
    assert exempt_count(2673, 0.01) == 27
    assert exempt_count(1, 0.01) == exempt_count(500, 0.0) == 0
    for n in range(1, 400):
        allowed = exempt_count(n, 0.01)
        over = np.r_[np.full(n - allowed - 1, 6.0), np.full(allowed + 1, 6.5)]
        assert np.quantile(over, 0.99) > 6  # one more day above 6 always breaks the p99


def test_container_days_follow_the_backtest_metrics() -> None:
    windows = days(3.7)
    cpu = 0.5 + 0.1 * np.sin(windows / 7.0)
    cpu[PER_DAY + 10 : PER_DAY + 30] = np.nan  # a gap in the first evaluated day
    cpu[int(2.2 * PER_DAY) : int(2.9 * PER_DAY)] = np.nan  # most of day 1: it keeps its length
    frame = history(np.vstack([cpu, cpu[::-1]]))
    cut = container_days(prepare_history(frame), "cpu")
    result = run_backtest(
        frame, strategies=[fixed_spec(1.0, 2 * GIB)], execution=ExecutionSettings(workers=1)
    )
    counted = result.per_container_day
    assert cut.counted.sum() == len(counted)
    assert sorted(cut.span[cut.counted]) == sorted(
        np.round(counted["evaluated_days"] * PER_DAY).astype(int)
    )
    assert cut.container_days == pytest.approx(result.container_days)
    assert cut.windows == int(np.isnan(cut.usage).size - np.isnan(cut.usage).sum())
    assert budget_from_rate(cut, "cpu", 0.5) == pytest.approx(cut.windows / 2)
    assert budget_from_rate(cut, "memory", 1.0) == pytest.approx(result.container_days)
