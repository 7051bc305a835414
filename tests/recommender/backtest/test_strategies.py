"""The baseline strategies: the oracle bounds the rest, OOMs are learnt, rules as documented."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from recommender.backtest import ExecutionSettings, ReplaySettings, prepare_history, run_backtest
from recommender.backtest.container_blocks import ReplayBlock, cut_block, plan_blocks
from recommender.backtest.engine import Trajectory, replay
from recommender.backtest.registry import builtin_strategies
from recommender.backtest.strategies.autopilot import AutopilotSettings, AutopilotStrategy
from recommender.backtest.strategies.building_blocks import HysteresisPolicy, row_quantile
from recommender.backtest.strategies.krr import KrrSettings, KrrStrategy
from recommender.backtest.strategies.vpa import VpaStrategy, VpaStrategySettings
from recommender.backtest.strategies.vpa_updater import VpaUpdaterSettings, update_candidates
from recommender.data.synthetic import demo_fleet
from recommender.overrides import SettingsError
from recommender.replay import Requests, Strategy
from recommender.vpa.estimators import VpaRecommendation
from tests.recommender.backtest.helpers import (
    GIB,
    MIB,
    PER_DAY,
    START,
    STEP,
    days,
    fixed_spec,
    history,
)

SERIAL = ExecutionSettings(workers=1)
REAL = ("vpa", "krr", "autopilot")


def shapes() -> dict[str, pd.DataFrame]:
    w = days(3)
    rng = np.random.default_rng(7)
    noise = rng.gamma(2.0, 0.05, w.size)
    return {
        "constant": history(np.full(w.size, 0.5), np.full(w.size, GIB)),
        "step": history(
            np.where(w < 1.5 * PER_DAY, 0.3, 1.2) + noise,
            np.where(w < 1.5 * PER_DAY, 0.5, 1.5) * GIB,
        ),
        "sine": history(
            1 + 0.5 * np.sin(2 * np.pi * w / PER_DAY) + noise,
            (1 + 0.3 * np.sin(2 * np.pi * w / PER_DAY)) * GIB,
        ),
        "leak": history(0.2 + noise, 200 * MIB + w * 2 * MIB),
    }


def replayed(frame: pd.DataFrame, name: str) -> tuple[ReplayBlock, Trajectory]:
    prepared = prepare_history(frame, settings=ReplaySettings(warm_up_seconds=0))
    (rows,) = plan_blocks(prepared)
    block = cut_block(prepared, 0, rows)
    return block, replay(block, builtin_strategies()[name].factory(block.usage))


@pytest.mark.parametrize("shape", ["constant", "step", "sine", "leak", "demo"])
def test_the_oracle_never_falls_short_and_has_the_least_slack(shape: str) -> None:
    frame, events = demo_fleet(days=3) if shape == "demo" else (shapes()[shape], None)
    names = [*REAL, "oracle", "oracle-1h"]
    specs = [builtin_strategies()[name] for name in names] + [fixed_spec(1.0, 2 * GIB)]
    result = run_backtest(frame, events, strategies=specs, execution=SERIAL)
    oracle = result.summary["oracle"]
    for name in ("oracle", "oracle-1h"):
        assert result.summary[name]["cpu_shortfall_rate"] == 0.0
        assert result.summary[name]["oom_per_container_day"] == 0.0
    for name, metrics in result.summary.items():
        for slack in ("cpu_relative_slack", "memory_relative_slack"):
            assert oracle[slack] <= metrics[slack], (name, slack)
        assert (
            oracle["cpu_core_hours_requested"] <= metrics["cpu_core_hours_requested"] * (1 + 1e-12)
            or metrics["cpu_shortfall_rate"] > 0
        )


@pytest.mark.parametrize("name", REAL)
def test_an_oom_raises_the_next_memory_request(name: str) -> None:
    w = days(2)
    memory = np.where(w < 1.2 * PER_DAY, 400 * MIB, 3 * GIB)
    _, trajectory = replayed(history(np.full(w.size, 0.2), memory), name)
    killed = np.flatnonzero(trajectory.oom[:, 0])
    assert killed.size, "the jump must OOM under the learnt limit"
    first = int(killed[0])
    assert trajectory.memory[first + 1, 0] > trajectory.memory[first, 0]
    assert trajectory.memory[-1, 0] >= 3 * GIB  # it learns its way out of the loop
    assert not trajectory.oom[-PER_DAY // 4 :, 0].any()


def test_krr_requests_p95_cpu_and_max_memory_plus_15_percent() -> None:
    w = days(1)
    cpu = (w % 100) / 100.0
    memory = 300 * MIB + (w % 50) * MIB
    prepared = prepare_history(history(cpu, memory), settings=ReplaySettings(warm_up_seconds=0))
    block = cut_block(prepared, 0, plan_blocks(prepared)[0])
    always = KrrStrategy(KrrSettings(policy=HysteresisPolicy(min_relative_change=0.0)))
    trajectory = replay(block, always)
    hour = 12
    for end in (5 * hour, 23 * hour):  # recommendations made at the end of hours 5 and 23
        seen = slice(0, end)
        expected_cpu = np.ceil(np.percentile(cpu[seen], 95) * 1000 - 1e-9) / 1000
        expected_memory = np.ceil(memory[seen].max() * 1.15 / MIB - 1e-9) * MIB
        assert trajectory.cpu[end, 0] == pytest.approx(expected_cpu)
        assert trajectory.memory[end, 0] == pytest.approx(expected_memory)
    assert np.all(trajectory.cpu[5 * hour : 6 * hour, 0] == trajectory.cpu[5 * hour, 0])


def test_autopilot_rises_fast_and_falls_slowly() -> None:
    w = days(5)
    high = (w >= PER_DAY) & (w < 1.5 * PER_DAY)  # 12 hours at 2 cores, else 0.5
    _, trajectory = replayed(history(np.where(high, 2.0, 0.5)), "autopilot")
    assert trajectory.cpu[PER_DAY + 12, 0] > 2.0  # within the hour
    after = int(1.5 * PER_DAY)
    assert np.all(trajectory.cpu[after : after + 6 * 12, 0] > 2.0)  # held for hours
    assert trajectory.cpu[-1, 0] < 1.0  # and gone days later


def test_vpa_settles_near_p90_of_a_steady_load() -> None:
    w = days(2)
    rng = np.random.default_rng(1)
    cpu = rng.uniform(0.4, 0.6, w.size)
    _, trajectory = replayed(history(cpu, np.full(w.size, GIB)), "vpa")
    final = trajectory.cpu[-1, 0]
    assert np.quantile(cpu, 0.9) * 1.15 <= final <= np.quantile(cpu, 0.9) * 1.15 * 1.06
    assert trajectory.changed[PER_DAY:, 0].sum() <= 2  # the updater does not churn


def bounds(target: float, lower: float, upper: float) -> VpaRecommendation:
    one = np.ones(1)
    return VpaRecommendation(
        target * one, lower * one, upper * one, GIB * one, 0.5 * GIB * one, 2 * GIB * one, one
    )


@pytest.mark.parametrize(
    ("request_cpu", "age_hours", "oom", "expected"),
    [
        (np.nan, 0, False, True),  # no request yet
        (0.3, 0, False, True),  # below the lower bound
        (5.0, 0, False, True),  # above the upper bound
        (1.05, 13, False, False),  # old but only 5 % off
        (1.2, 11, False, False),  # 20 % off but young
        (1.2, 13, False, True),  # old and 20 % off
        (1.0, 0, True, True),  # right after an OOM
    ],
)
def test_vpa_updater_rules(request_cpu: float, age_hours: float, oom: bool, expected: bool) -> None:
    current = Requests(np.array([request_cpu]), np.array([GIB]), np.array([GIB]))
    act = update_candidates(
        current,
        bounds(1.0, 0.5, 2.0),
        np.array([age_hours * 3600.0]),
        np.array([oom]),
        VpaUpdaterSettings(),
    )
    assert bool(act[0]) is expected


def test_row_quantile_ignores_nan_like_numpy() -> None:
    values = np.array([[1.0, 2.0, np.nan, 4.0], [np.nan] * 4, [3.0, 1.0, 2.0, 5.0]])
    got = row_quantile(values, 0.95)
    assert got[0] == pytest.approx(np.nanpercentile(values[0], 95))
    assert np.isnan(got[1])
    assert got[2] == pytest.approx(np.percentile(values[2], 95))


def changes_in_any_day(changed: np.ndarray) -> int:
    """The most changes (column 0) within any 24 h of the replay."""
    counts = np.convolve(changed[:, 0].astype(int), np.ones(PER_DAY, dtype=int), mode="valid")
    return int(counts.max())


@pytest.mark.parametrize("name", ["krr", "autopilot"])
def test_a_capped_baseline_keeps_its_change_budget(name: str) -> None:
    w = days(4)
    rng = np.random.default_rng(3)
    cpu = 1.0 + np.sin(2 * np.pi * w / PER_DAY) * 0.8 + rng.gamma(2.0, 0.1, w.size)
    prepared = prepare_history(history(cpu), settings=ReplaySettings(warm_up_seconds=0))
    block = cut_block(prepared, 0, plan_blocks(prepared)[0])
    eager = HysteresisPolicy(min_relative_change=0.0)
    capped = HysteresisPolicy(min_relative_change=0.0, max_changes_per_day=3)

    def build(policy: HysteresisPolicy) -> Strategy:
        if name == "krr":
            return KrrStrategy(KrrSettings(policy=policy))
        return AutopilotStrategy(AutopilotSettings(policy=policy))

    free = replay(block, build(eager)).changed
    held = replay(block, build(capped)).changed
    assert changes_in_any_day(free) > 6  # uncapped, it follows the cycle many times a day
    assert changes_in_any_day(held) == 3  # capped, it uses the budget and no more


def test_a_capped_baseline_still_restarts_after_an_oom_kill() -> None:
    w = days(2)
    memory = np.where(w < PER_DAY, 500 * MIB, 500 * MIB + (w - PER_DAY) * 20 * MIB)
    prepared = prepare_history(
        history(np.full(w.size, 0.5), memory), settings=ReplaySettings(warm_up_seconds=0)
    )
    block = cut_block(prepared, 0, plan_blocks(prepared)[0])
    policy = HysteresisPolicy(max_changes_per_day=1)
    trajectory = replay(block, KrrStrategy(KrrSettings(policy=policy)))
    kills = np.flatnonzero(trajectory.oom[:, 0])
    assert kills.size >= 3  # the leak outgrows each new limit
    for kill in kills[:3]:  # every kill is answered in the next window, budget or not
        assert trajectory.memory[kill + 1, 0] > trajectory.memory[kill, 0]


def one_block(frame: pd.DataFrame) -> ReplayBlock:
    prepared = prepare_history(frame, settings=ReplaySettings(warm_up_seconds=0))
    return cut_block(prepared, 0, plan_blocks(prepared)[0])


@pytest.mark.parametrize(
    ("strategy", "name"),
    [
        (KrrStrategy(KrrSettings(update_period_seconds=420)), "update_period_seconds (420 s)"),
        (KrrStrategy(KrrSettings(update_period_seconds=1)), "update_period_seconds (1 s)"),
        (KrrStrategy(KrrSettings(history_seconds=100)), "history_seconds (100 s)"),
        (AutopilotStrategy(AutopilotSettings(max_over_seconds=420)), "max_over_seconds (420 s)"),
        (VpaStrategy(VpaStrategySettings(recommend_every_seconds=420)), "recommend_every_seconds"),
    ],
)
def test_a_baseline_span_off_the_data_grid_is_refused(strategy: Strategy, name: str) -> None:
    block = one_block(history(np.full(PER_DAY, 0.5)))  # 300 s windows
    with pytest.raises(SettingsError, match="whole number of the data's 300 s sample period"):
        replay(block, strategy)
    with pytest.raises(SettingsError, match=re.escape(name)):
        replay(block, strategy)


@pytest.mark.parametrize("step", [STEP, 420])
def test_baseline_defaults_run_on_any_grid(step: int) -> None:
    """Defaults nobody chose are rounded to the grid as before (vpa's 60 s loop, krr's hour)."""
    frame = history(np.full(PER_DAY, 0.5))
    frame["timestamp"] = START + (frame["timestamp"] - START) * (step // 60) / (STEP // 60)
    block = one_block(frame)
    assert block.usage.step == step
    for strategy in (KrrStrategy(), AutopilotStrategy(), VpaStrategy()):
        assert np.isfinite(replay(block, strategy).cpu[1:]).all()
    krr = KrrStrategy(KrrSettings(update_period_seconds=2 * step))  # a whole number: kept
    replay(block, krr)
    assert krr._period == 2
    hold = AutopilotStrategy(AutopilotSettings(max_over_seconds=0))  # 0: the latest only
    replay(block, hold)
    assert hold._recent.shape[0] == 1
