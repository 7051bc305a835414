"""Steering realized CPU shortfall to a share of a reference's (recommender.forecast.feedback)."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.forecast.feedback import MAX_FACTOR, MIN_FACTOR, ReferenceLoop, ShortfallFeedback
from recommender.forecast.settings import FeedbackSettings, ForecastSettings, ForecastSettingsError
from recommender.replay import Fleet, Requests
from tests.recommender.forecast import synthetic as syn
from tests.recommender.forecast.test_strategy import replay

FAST = FeedbackSettings(steer=True, goal=0.9, half_life_days=0.5, prior_windows=10.0)


def _window(n: int, short: int) -> tuple[np.ndarray, np.ndarray]:
    """Usage and requests for one window of `n` containers, `short` of them short."""
    usage = np.ones(n)
    request = np.full(n, 2.0)
    request[:short] = 0.5
    return usage, request


def _run(feedback: ShortfallFeedback, ours: int, theirs: int, windows: int = 2000) -> None:
    for _ in range(windows):
        usage, request = _window(100, ours)
        _, reference = _window(100, theirs)
        feedback.observe(usage, request, 0.05, reference, 0.05)


def test_before_any_window_the_planner_keeps_its_own_factor() -> None:
    feedback = ShortfallFeedback.start(FAST, 0.6, syn.STEP)
    assert feedback.parity_factor() == pytest.approx(0.6)


def test_realized_as_planned_and_a_faithful_emulation_steer_to_the_goal() -> None:
    feedback = ShortfallFeedback.start(FAST, 0.6, syn.STEP)
    _run(feedback, ours=5, theirs=5)  # both exactly at the planned / emulated 5 %
    assert feedback.inflation() == pytest.approx(1.0, abs=0.01)
    assert feedback.parity_factor() == pytest.approx(0.9, abs=0.01)


def test_inflated_shortfall_plans_lower_and_a_looser_reference_plans_higher() -> None:
    inflated = ShortfallFeedback.start(FAST, 0.6, syn.STEP)
    _run(inflated, ours=10, theirs=5)  # we run at twice the planned rate
    assert inflated.parity_factor() == pytest.approx(0.45, abs=0.01)
    loose = ShortfallFeedback.start(FAST, 0.6, syn.STEP)
    _run(loose, ours=5, theirs=8)  # the reference is short 1.6x as often as emulated
    assert loose.parity_factor() == pytest.approx(0.9 * 1.6, abs=0.02)
    capped = ShortfallFeedback.start(FAST, 0.6, syn.STEP)
    _run(capped, ours=1, theirs=50)
    assert capped.parity_factor() == MAX_FACTOR
    floored = ShortfallFeedback.start(FAST, 0.6, syn.STEP)
    _run(floored, ours=50, theirs=0)
    assert floored.parity_factor() == MIN_FACTOR


def test_steering_a_fixed_target_is_refused() -> None:
    with pytest.raises(ForecastSettingsError, match="cpu_shortfall_mode=vpa"):
        ForecastSettings(cpu_shortfall_mode="fixed", feedback=FAST)


def test_windows_without_a_request_or_usage_are_not_judged() -> None:
    feedback = ShortfallFeedback.start(FAST, 0.6, syn.STEP)
    usage = np.array([1.0, np.nan, 1.0])
    feedback.observe(usage, np.array([np.nan, 0.1, 0.5]), 0.1)
    assert feedback.realized == 1.0 and feedback.planned == pytest.approx(0.1)
    assert feedback.reference_short == 0.0  # no reference given: nothing counted for it


class _Fixed:
    """A reference strategy that always proposes the same requests."""

    name = "fixed"

    def __init__(self, cpu: float, memory: float) -> None:
        self.cpu, self.memory = cpu, memory
        self.kills: list[tuple[int, list[int], list[float]]] = []
        self.seen: list[np.ndarray] = []

    def reset(self, fleet: Fleet) -> None:
        self.n = fleet.size

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        self.seen.append(memory.copy())

    def observe_oom(self, step: int, containers: np.ndarray, memory: np.ndarray) -> None:
        self.kills.append((step, containers.tolist(), memory.tolist()))

    def decide(self, step: int, current: Requests) -> Requests:
        cpu = np.full(self.n, self.cpu)
        cpu[0] = np.nan  # no opinion on the first container: its request stays
        return Requests(cpu, np.full(self.n, self.memory), np.full(self.n, np.nan))


def test_the_reference_loop_admits_like_a_replay_and_is_oom_killed_on_its_own_limit() -> None:
    reference = _Fixed(cpu=0.5, memory=100.0)
    loop = ReferenceLoop(reference)
    loop.reset(Fleet(syn.keys(2), syn.START, syn.STEP, memory_limit_ratio=np.array([1.0, 2.0])))
    loop.observe(0, np.ones(2), np.array([150.0, 150.0]))  # nothing set yet: no kill
    loop.decide(0)
    assert np.isnan(loop.current.cpu[0]) and loop.current.cpu[1] == 0.5
    assert loop.current.memory_limit.tolist() == [100.0, 200.0]
    loop.observe(1, np.ones(2), np.array([150.0, 150.0]))
    assert reference.kills == [(1, [0], [100.0])]  # only the first is over its limit
    assert reference.seen[-1].tolist() == [100.0, 150.0]  # a killed container uses its limit


def test_a_steered_strategy_plans_more_shortfall_next_to_a_looser_reference() -> None:
    settings = ForecastSettings(feedback=FAST)
    cpu = np.vstack([syn.noise(6.0, seed=s) for s in range(4)])
    memory = np.full(cpu.shape, syn.GIB)
    _, _, _, loose = replay(cpu, memory, settings, _Fixed(cpu=0.0, memory=syn.GIB))
    _, _, _, strict = replay(cpu, memory, settings, _Fixed(cpu=1e6, memory=syn.GIB))
    assert loose.plan is not None and strict.plan is not None
    assert loose.feedback.parity_factor() == MAX_FACTOR
    assert strict.feedback.parity_factor() < settings.vpa_parity_factor  # never short
    assert loose.plan.shortfall_budget > strict.plan.shortfall_budget


def test_steering_never_changes_an_earlier_decision() -> None:
    settings = ForecastSettings(feedback=FAST)
    cpu = np.vstack([syn.noise(5.0, seed=s) for s in range(3)])
    memory = np.full(cpu.shape, syn.GIB)
    cut = int(3.5 * syn.PER_DAY) + 5
    base, _, _, _ = replay(cpu, memory, settings, _Fixed(cpu=0.3, memory=syn.GIB))
    changed = cpu.copy()
    changed[:, cut:] *= 3.0
    new, _, _, _ = replay(changed, memory, settings, _Fixed(cpu=0.3, memory=syn.GIB))
    np.testing.assert_array_equal(new[:, : cut + 1], base[:, : cut + 1])
    assert not np.array_equal(new[:, cut + 2 :], base[:, cut + 2 :])
