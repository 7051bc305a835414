"""Hysteresis and the change budget of the schedule."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.forecast.policy import ForecastPolicy, InForce, Needs
from recommender.forecast.settings import ForecastSettings
from tailor.change_budget import ChangeBudget

SETTINGS = ForecastSettings().with_budget(6)  # the scenarios count a budget of 6
POLICY = ForecastPolicy(SETTINGS)
YES = np.array([True])


def build_schedule(
    current_cpu: np.ndarray,
    current_memory: np.ndarray,
    cpu: np.ndarray,
    memory: np.ndarray,
    settings: ForecastSettings,
    budget: ChangeBudget | None = None,
    *,
    hold_until: np.ndarray | None = None,
    scale: np.ndarray | None = None,
    usage: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The policy's schedule of these hourly needs from the requests in force, blocks
    from UNIX second 0 (the block in force, which plays nothing here, left out)."""
    n, _ = cpu.shape
    unknown = np.full(n, np.nan)
    needs = Needs(
        cpu=cpu,
        memory=memory,
        scale=np.zeros(n) if scale is None else scale,
        usage=unknown if usage is None else usage,
        recent_low=unknown,
        recent_high=unknown,
        hold_until=np.full(n, -np.inf) if hold_until is None else hold_until,
        cpu_peak=unknown,
        memory_peak=unknown,
        block_start=-3600.0,
        history_end=0.0,
        first_start=0.0,
        period=3600,
    )
    in_force = InForce(current_cpu, current_memory, budget)
    planned_cpu, planned_memory = ForecastPolicy(settings).schedule(needs, in_force)
    return planned_cpu[:, 1:], planned_memory[:, 1:]


def test_cpu_follows_a_memory_resize_to_the_plan_but_not_below_usage() -> None:
    cpu = np.array([2.0, 2.0, 2.0, 0.5])
    required = np.array([[0.4, 0.5, 0.3]] * 3 + [[1.0, 1.0, 1.0]])
    alone = np.array([True, True, False, True])
    usage = np.array([0.2, 0.6, 0.2, 0.4])
    moved = POLICY.ride_with_memory(cpu, required, alone, usage, np.zeros(4), np.ones(4, bool))
    # down to the plan, held at usage + 10 %, untouched without a memory resize, and up
    np.testing.assert_allclose(moved, [0.5, 0.66, 2.0, 1.0])


def test_small_moves_are_ignored_and_large_ones_cover_the_blocks_ahead() -> None:
    current = np.array([1.0])
    small_up = np.array([[1.05, 1.05, 1.05]])
    assert POLICY.cpu_step(current, small_up, YES, YES)[0] == 1.0
    ramp = np.array([[1.5, 2.0, 2.5, 3.0]])
    assert POLICY.cpu_step(current, ramp, YES, YES)[0] == 2.5  # covers cover_blocks = 3
    small_down = np.array([[0.9, 0.9, 0.9]])
    assert POLICY.cpu_step(current, small_down, YES, YES)[0] == 1.0
    down = np.array([[0.5, 0.6, 0.4]])
    assert POLICY.cpu_step(current, down, YES, YES)[0] == 0.6
    assert POLICY.cpu_step(current, down, YES, ~YES)[0] == 1.0  # no budget left
    assert POLICY.cpu_step(current, ramp, ~YES, YES)[0] == 1.0


def test_a_daily_cycle_costs_few_changes_per_day() -> None:
    settings = ForecastSettings()
    hours = np.arange(48)
    cycle = 1.0 + 0.8 * np.sin(2 * np.pi * hours / 24)
    required = np.vstack([cycle, np.full(48, 0.3)])
    unset = np.full(2, np.nan)
    memory = np.full((2, 48), 2.0**30)
    cpu, _ = build_schedule(unset, unset, required, memory, settings)
    changes = np.sum(cpu[:, 1:] != cpu[:, :-1], axis=1)
    assert changes[1] == 0
    assert 2 <= changes[0] <= 2 * settings.max_changes_per_day
    assert cpu[0].sum() < 1.3 * cycle.sum()  # follows the cycle instead of its peak


def test_planned_changes_respect_the_daily_budget() -> None:
    rng = np.random.default_rng(0)
    required = rng.uniform(0.1, 2.0, size=(1, 72))  # wild: wants a change every hour
    unset = np.full(1, np.nan)
    cpu, _ = build_schedule(unset, unset, required, np.full((1, 72), 1.0), SETTINGS)
    moved = np.flatnonzero(cpu[0, 1:] != cpu[0, :-1])
    for start in range(72):
        in_day = np.sum((moved >= start) & (moved < start + 24))
        assert in_day <= SETTINGS.max_changes_per_day


def test_a_schedule_cuts_as_a_block_boundary_does() -> None:
    # in force 1.0 everywhere, the need 0.6: a cut past the decrease threshold
    current, need = np.ones(3), np.full((3, 4), 0.6)
    memory = np.full((3, 4), 1.0)
    scale = np.array([2.0, 10.0, 2.0])  # the second's recent peak makes 0.4 core a small cut
    usage = np.array([0.2, 0.2, 0.8])  # the third uses 0.8 right now
    cpu, _ = build_schedule(current, np.ones(3), need, memory, SETTINGS, scale=scale, usage=usage)
    np.testing.assert_allclose(cpu[:, 0], [0.6, 1.0, 0.88])  # not below the usage + 10 %
    np.testing.assert_allclose(cpu[1], 1.0)  # a small cut is never made
    # the usage is what the container uses now: it holds the first block only
    np.testing.assert_allclose(cpu[2, 1:], 0.6)


def test_a_schedule_lowers_memory_alone_by_a_large_share_and_not_in_an_oom_hold() -> None:
    cpu_need = np.full((3, 4), 1.0)
    memory_need = np.array([[0.8] * 4, [0.6] * 4, [0.6] * 4])
    hold = np.array([-np.inf, -np.inf, 2 * 3600.0])  # the third held until block 2
    _, memory = build_schedule(
        np.ones(3), np.ones(3), cpu_need, memory_need, SETTINGS, hold_until=hold
    )
    np.testing.assert_allclose(memory[0], 1.0)  # a 20 % cut alone is not worth a resize
    np.testing.assert_allclose(memory[1], 0.6)  # a 40 % one is
    np.testing.assert_allclose(memory[2], [1.0, 1.0, 0.6, 0.6])  # once the hold is over


def test_memory_rides_down_with_a_cpu_resize_made_with_the_reserved_change() -> None:
    """A CPU rise may spend the change kept for reactions; memory then moves in the same
    resize, as the strategy moves it, though no planned change is left for it alone."""
    hour = 3600.0
    made = [np.array([-20, -18, -10, -5, -1]) * hour]  # 6 a day, 4 in 16 h: one left
    budget = ChangeBudget.after(made, SETTINGS.max_changes_per_day)
    assert budget.left(0.0)[0] == SETTINGS.reserved_changes
    cpu, memory = build_schedule(
        np.ones(1), np.ones(1), np.full((1, 4), 1.5), np.full((1, 4), 0.6), SETTINGS,
        budget=budget,
    )  # fmt: skip
    assert cpu[0, 0] == pytest.approx(1.5)  # the rise takes the reserved change
    assert memory[0, 0] == pytest.approx(0.6)  # and memory rides along with it
