"""The change budget: at most `cap` changes per trailing day, at the same rate over 16 h."""

from __future__ import annotations

import numpy as np
import pytest

from tailor.change_budget import DAY, ChangeBudget

HOUR = 3600
SET = np.ones(2)  # both containers had a request before


def first(n: int) -> np.ndarray:
    """Only container 0 of `n` changed."""
    return np.arange(n) == 0


def test_a_fresh_budget_allows_the_whole_cap_within_the_shorter_span() -> None:
    budget = ChangeBudget(2, 6)
    assert budget.left(0.0).tolist() == [4, 4]  # 6 x 2/3 within any 16 h


def test_changes_are_counted_per_container_and_age_out() -> None:
    budget = ChangeBudget(2, 6)
    for hour in range(4):
        budget.record(first(2), SET, hour * HOUR)
    assert budget.left(4 * HOUR).tolist() == [0, 4]  # the 16 h span is full
    assert budget.left(17 * HOUR).tolist() == [2, 4]  # two left the 16 h span, all in 24 h
    assert budget.left(3 * HOUR + DAY + 1).tolist() == [4, 4]  # all aged out


def test_the_daily_cap_binds_when_changes_are_spread_out() -> None:
    budget = ChangeBudget(1, 6)
    for hour in (0, 1, 2, 3, 20, 21):
        budget.record(first(1), SET[:1], hour * HOUR)
    assert budget.left(22 * HOUR).tolist() == [0]  # 16 h back holds two, 24 h back six
    assert budget.left(DAY + 30.0).tolist() == [1]  # the change at 0 h has aged out
    assert budget.left(DAY + 3 * HOUR + 30.0).tolist() == [2]  # 16 h back: 20 h, 21 h


def test_forced_changes_can_overdraw_the_budget() -> None:
    budget = ChangeBudget(1, 2)
    for minute in range(3):
        budget.record(first(1), SET[:1], minute * 60.0)
    assert budget.left(200.0).tolist() == [-1]


def test_a_first_setting_is_not_a_change() -> None:
    budget = ChangeBudget(2, 6)
    budget.record(np.array([True, True]), np.array([np.nan, 1.0]), 0.0)
    assert budget.left(60.0).tolist() == [4, 3]


@pytest.mark.parametrize(("cap", "spans"), [(0, (1.0,)), (6, ()), (6, (0.0, 1.0)), (6, (1.5,))])
def test_bad_budgets_are_refused(cap: int, spans: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match=r"cap|spans"):
        ChangeBudget(1, cap, spans)
