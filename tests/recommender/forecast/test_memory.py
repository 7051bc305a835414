"""Memory: never below recent peaks, an OOM bumps at once and holds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recommender.forecast.memory import OomHistory, plan_memory
from recommender.forecast.settings import HOUR, MIB, ForecastSettings, MemorySettings
from tests.recommender.forecast import synthetic as syn

SETTINGS = ForecastSettings()
MARGIN = 1.0 + SETTINGS.memory_margin
NO_HISTORY = np.zeros((1, 0))  # one killed series, no memory windows remembered


def test_an_oom_jumps_to_the_remembered_peak_and_holds() -> None:
    ooms = OomHistory.empty(2)
    ooms.record(
        np.array([0, 1]),
        np.array([1000.0, 1000.0]),
        np.array([1.0 * syn.GIB, 1.0 * syn.GIB]),
        SETTINGS,
        history=np.array([[0.5 * syn.GIB, np.nan], [np.nan, 8.0 * syn.GIB]]),  # NaN: gaps
    )
    # series 0: the bump factor above the limit it was killed at; series 1: its known peak
    assert ooms.floor[0] == pytest.approx(SETTINGS.memory.oom_bump_factor * syn.GIB)
    assert ooms.floor[1] == pytest.approx(8.0 * syn.GIB * (1 + SETTINGS.memory_margin))
    held = 1000.0 + SETTINGS.memory.oom_hold_hours * HOUR
    assert (ooms.floor_at(held - 1) == ooms.floor).all()
    assert (ooms.floor_at(held + 1) == 0).all()
    assert ooms.count.tolist() == [1, 1]


def test_a_small_kill_raises_by_the_minimum_step_plus_the_margin() -> None:
    # upstream: an OOM sample of used + 100 MiB, then the 15 % margin on top
    ooms = OomHistory.empty(1)
    ooms.record(np.array([0]), np.array([0.0]), np.array([100.0 * MIB]), SETTINGS, NO_HISTORY)
    assert SETTINGS.memory.oom_bump_factor * 100.0 * MIB < 200.0 * MIB * MARGIN
    assert ooms.floor[0] == pytest.approx(200.0 * MIB * MARGIN)


def test_a_kill_with_no_remembered_memory_is_bumped_from_its_own_amount() -> None:
    """All gaps, or no windows at all, is a remembered peak of 0, whatever the caller."""
    kills = np.array([0, 1]), np.array([0.0, 0.0]), np.array([1.0 * syn.GIB, 1.0 * syn.GIB])
    gaps, none = OomHistory.empty(2), OomHistory.empty(2)
    gaps.record(*kills, SETTINGS, np.full((2, 3), np.nan))
    none.record(*kills, SETTINGS, np.zeros((2, 0)))
    assert gaps.floor.tolist() == none.floor.tolist()
    assert gaps.floor == pytest.approx(SETTINGS.memory.oom_bump_factor * syn.GIB)


def test_a_large_kill_raises_by_the_bump_factor() -> None:
    ooms = OomHistory.empty(1)
    used = 4.0 * syn.GIB
    ooms.record(np.array([0]), np.array([0.0]), np.array([used]), SETTINGS, NO_HISTORY)
    assert ooms.floor[0] == pytest.approx(used * SETTINGS.memory.oom_bump_factor)


def _plan(memory: np.ndarray, states: np.ndarray, future: np.ndarray, ooms=None, settings=SETTINGS):
    n = memory.shape[0]
    ooms = ooms or OomHistory.empty(n)
    starts = np.arange(future.shape[1]) * HOUR + 10**9
    return plan_memory(memory, states, future, 12, ooms, starts, 10**9, settings)


def test_flat_memory_is_covered_with_the_margin_and_never_below_recent_peaks() -> None:
    memory = np.full((1, 12 * 48), 1.0 * syn.GIB)
    memory[0, -3] = 1.5 * syn.GIB  # a recent peak
    states = np.zeros(memory.shape, dtype=np.int64)
    plan = _plan(memory, states, np.zeros((1, 24), dtype=np.int64))
    assert plan.required[0, 0] == pytest.approx(1.5 * syn.GIB * MARGIN)
    assert (plan.required[0] >= 1.0 * syn.GIB * MARGIN - 1).all()


def test_memory_follows_the_cpu_state_of_a_batch_job_when_kills_stay_within_tolerance() -> None:
    days = 6
    cpu = syn.on_off(days, busy=4.0)
    memory = np.where(cpu > 1.0, 8.0 * syn.GIB, 0.5 * syn.GIB)[None, :]
    states = np.where(cpu > 1.0, 2, 0)[None, :]
    tolerant = ForecastSettings(memory=MemorySettings(oom_tolerance_per_day=5.0))
    plan = _plan(memory, states, np.array([[0] * 12 + [2] * 12]), settings=tolerant)
    assert plan.by_state[0]
    assert plan.required[0, 0] == pytest.approx(0.5 * syn.GIB * MARGIN)  # idle: small
    assert plan.required[0, 12] == pytest.approx(8.0 * syn.GIB * MARGIN)  # busy: the job's peak
    strict = ForecastSettings(
        memory=MemorySettings(oom_tolerance_per_day=0.0, oom_worth_bytes=math.inf)
    )
    plan = _plan(memory, states, np.array([[0] * 24]), settings=strict)
    assert not plan.by_state[0]
    assert plan.required[0, 0] == pytest.approx(8.0 * syn.GIB * MARGIN)  # covers the peak


def test_the_memory_sizing_by_state_saves_buys_its_kills() -> None:
    cpu = syn.on_off(6, busy=4.0)
    memory = np.where(cpu > 1.0, 8.0 * syn.GIB, 0.5 * syn.GIB)[None, :]
    states = np.where(cpu > 1.0, 2, 0)[None, :]
    idle = np.array([[0] * 24])
    cheap = ForecastSettings(
        memory=MemorySettings(oom_tolerance_per_day=0.0, oom_worth_bytes=syn.GIB)
    )
    plan = _plan(memory, states, idle, settings=cheap)
    assert plan.by_state[0] and plan.extra_oom_per_day[0] > 0.5  # a kill per job start ...
    assert plan.state_saving[0] > 3.0 * syn.GIB  # ... for 7.5 GiB x margin while idle
    dear = ForecastSettings(
        memory=MemorySettings(oom_tolerance_per_day=0.0, oom_worth_bytes=1e3 * syn.GIB)
    )
    plan = _plan(memory, states, idle, settings=dear)
    assert not plan.by_state[0] and plan.extra_oom_per_day[0] > 0.5  # a kill per job start


def test_a_state_with_no_peak_of_its_own_is_judged_at_the_overall_level() -> None:
    windows = 12 * 24 * 6
    states = np.zeros((1, windows), dtype=np.int64)
    memory = np.full((1, windows), 0.2 * syn.GIB)
    blips = np.arange(3 * 12, windows - 1, 12 * 24)  # a one-window CPU blip daily ...
    states[0, blips] = 1
    memory[0, blips + 1] = 0.3 * syn.GIB * 1.3 ** np.arange(blips.size)  # ... then a new high
    settings = ForecastSettings(memory=MemorySettings(oom_worth_bytes=math.inf))
    plan = _plan(memory, states, np.zeros((1, 24), dtype=np.int64), settings=settings)
    # the blip's state is never stable, so it has no peak: the spike after it is judged
    # at the overall level, as the plan sizes that state, not as a state that never kills
    # (which made sizing by state look safer than sizing on the peak)
    assert np.isnan(plan.state_peak[0, 1])
    assert plan.extra_oom_per_day[0] == pytest.approx(0.0)


def test_an_active_oom_hold_is_a_floor_of_the_plan() -> None:
    memory = np.full((1, 12 * 24), 1.0 * syn.GIB)
    ooms = OomHistory.empty(1)
    ooms.record(np.array([0]), np.array([10.0**9]), np.array([4.0 * syn.GIB]), SETTINGS, NO_HISTORY)
    plan = _plan(memory, np.zeros(memory.shape, int), np.zeros((1, 48), int), ooms=ooms)
    hold = int(SETTINGS.memory.oom_hold_hours)
    assert (plan.required[0, :hold] >= 4.8 * syn.GIB - 1).all()
    assert plan.required[0, hold + 1] == pytest.approx(MARGIN * syn.GIB)


def test_no_memory_data_gives_no_memory_plan() -> None:
    memory = np.full((1, 12 * 24), np.nan)
    plan = _plan(memory, np.zeros(memory.shape, int), np.zeros((1, 24), int))
    assert np.isnan(plan.required).all()
    assert np.isnan(plan.for_states(np.array([0]))).all()


def test_a_state_peak_older_than_the_peak_window_does_not_raise_the_limit() -> None:
    # a job ran in the first days of a 12-day history, then the container idled for
    # over a week: the busy state's old peak may not bring back that week's memory
    days = 12
    cpu = syn.on_off(days, busy=4.0)
    old = np.arange(cpu.size) < 3 * 288
    memory = np.where(old & (cpu > 1.0), 8.0 * syn.GIB, 0.5 * syn.GIB)[None, :]
    states = np.where(old & (cpu > 1.0), 2, 0)[None, :]
    tolerant = ForecastSettings(memory=MemorySettings(oom_tolerance_per_day=5.0))
    plan = _plan(memory, states, np.array([[2] * 24]), settings=tolerant)
    assert plan.by_state[0]
    assert plan.state_peak[0, 2] == pytest.approx(8.0 * syn.GIB)  # remembered, not used
    assert (plan.required[0] <= 0.5 * syn.GIB * MARGIN + 1).all()
    assert plan.for_states(np.array([2]))[0] == pytest.approx(0.5 * syn.GIB * MARGIN)
