"""The closed loop: what a strategy sees, when its decisions apply, what counts as a change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.backtest import ReplaySettings, prepare_history
from recommender.backtest.container_blocks import ReplayBlock, cut_block, plan_blocks
from recommender.backtest.engine import replay
from recommender.replay import Fleet, Requests
from tests.recommender.backtest.helpers import GIB, MIB, PER_DAY, FixedStrategy, days, history


def one_block(frame: pd.DataFrame) -> ReplayBlock:
    prepared = prepare_history(frame, settings=ReplaySettings(warm_up_seconds=0))
    (rows,) = plan_blocks(prepared)
    return cut_block(prepared, 0, rows)


def test_decisions_apply_from_the_next_window() -> None:
    block = one_block(history(np.full(PER_DAY * 2, 0.5)))
    trajectory = replay(block, FixedStrategy(1.0, 2 * GIB))
    assert np.isnan(trajectory.cpu[0, 0])  # nothing in force before the first decision
    assert np.all(trajectory.cpu[1:, 0] == 1.0)
    assert np.all(trajectory.memory_limit[1:, 0] == 2 * GIB)


def test_a_strategy_sees_each_window_once_in_order() -> None:
    cpu = np.linspace(0.1, 1.0, PER_DAY * 2)
    strategy = FixedStrategy(1.0, 2 * GIB)
    replay(one_block(history(cpu)), strategy)
    steps = [step for step, _, _ in strategy.seen]
    assert steps == list(range(cpu.size))
    assert np.allclose([seen[0] for _, seen, _ in strategy.seen], cpu)


def test_an_oom_is_capped_at_the_limit_and_reported_with_it() -> None:
    windows = days(2)
    memory = np.where(windows == 100, 3 * GIB, 1 * GIB)
    strategy = FixedStrategy(1.0, 2 * GIB)
    trajectory = replay(one_block(history(np.full(windows.size, 0.1), memory)), strategy)
    assert np.flatnonzero(trajectory.oom[:, 0]).tolist() == [100]
    step, containers, at_kill = strategy.ooms[0]
    assert (step, containers.tolist(), at_kill.tolist()) == (100, [0], [2 * GIB])
    assert strategy.seen[100][2][0] == 2 * GIB  # the kill caps what the metrics show
    assert strategy.seen[101][2][0] == 1 * GIB


class Stepper(FixedStrategy):
    """Memory request follows a schedule: step -> MiB decided at that step."""

    def __init__(self, schedule: dict[int, float]) -> None:
        super().__init__(1.0, 0.0)
        self.schedule = schedule
        self.value = np.nan

    def decide(self, step: int, current: Requests) -> Requests:
        self.value = self.schedule.get(step, self.value)
        memory = np.full(self.size, self.value * MIB)
        return Requests(np.full(self.size, 1.0), memory, current.memory_limit)


def test_changes_count_resizes_but_not_the_first_setting() -> None:
    block = one_block(history(np.full(PER_DAY * 2, 0.1), np.full(PER_DAY * 2, 10 * MIB)))
    trajectory = replay(block, Stepper({0: 500, 10: 600, 20: 600, 30: 400}))
    assert np.flatnonzero(trajectory.changed[:, 0]).tolist() == [11, 31]


def test_nan_proposals_keep_the_request_in_force() -> None:
    class Withdraws(FixedStrategy):
        def decide(self, step: int, current: Requests) -> Requests:
            if step == 0:
                return super().decide(step, current)
            return Requests(
                np.full(self.size, np.nan), np.full(self.size, np.nan), current.memory_limit
            )

    trajectory = replay(one_block(history(np.full(50, 0.1))), Withdraws(1.0, GIB))
    assert np.all(trajectory.cpu[1:, 0] == 1.0)
    assert not trajectory.changed.any()


def test_the_fleet_carries_the_limit_ratio_and_absolute_time() -> None:
    frame = history(np.full(40, 0.1), memory_request=GIB, memory_limit=1.5 * GIB)
    block = one_block(frame)
    fleet = block.fleet()
    assert isinstance(fleet, Fleet)
    assert fleet.limit_ratio().tolist() == [1.5]
    assert fleet.time_of(2) == fleet.start + 600
    trajectory = replay(block, FixedStrategy(1.0, 2 * GIB))
    assert trajectory.memory_limit[1, 0] == pytest.approx(3 * GIB)
    assert trajectory.memory[0, 0] == GIB  # the data's request before the first decision


def test_wrong_shaped_proposals_are_rejected() -> None:
    class Broken(FixedStrategy):
        def decide(self, step: int, current: Requests) -> Requests:
            return Requests(np.ones(3), np.ones(3), np.ones(3))

    with pytest.raises(ValueError, match="shape"):
        replay(one_block(history(np.full(10, 0.1))), Broken(1.0, GIB))
