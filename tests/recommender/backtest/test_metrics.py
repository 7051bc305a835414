"""Metrics on hand-built series whose answers are known in closed form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.backtest import ExecutionSettings, StrategySpec, run_backtest
from recommender.backtest.metrics import METRIC_NAMES, grouped_quantile
from recommender.replay import Requests
from tests.recommender.backtest.helpers import (
    GIB,
    MIB,
    PER_DAY,
    FixedStrategy,
    days,
    fixed_spec,
    history,
)

SERIAL = ExecutionSettings(workers=1)


def fixed_run(frame: pd.DataFrame, cpu: float, memory: float) -> dict[str, float]:
    result = run_backtest(frame, strategies=[fixed_spec(cpu, memory)], execution=SERIAL)
    return result.summary["fixed"]


def test_constant_load_with_double_requests() -> None:
    frame = history(np.full(3 * PER_DAY, 0.5), np.full(3 * PER_DAY, 1 * GIB))
    result = run_backtest(frame, strategies=[fixed_spec(1.0, 2 * GIB)], execution=SERIAL)
    m = result.summary["fixed"]
    assert result.container_days == pytest.approx(2.0)  # 3 days minus the 1-day warm-up
    assert m["cpu_relative_slack"] == pytest.approx(0.5)
    assert m["cpu_shortfall_rate"] == 0.0
    assert m["memory_relative_slack"] == pytest.approx(0.5)
    assert m["oom_per_container_day"] == 0.0
    assert m["changes_per_container_day"] == 0.0  # the first setting is not a change
    assert m["changes_per_container_day_p50"] == m["changes_per_container_day_p99"] == 0.0
    assert m["cpu_core_hours_requested"] == pytest.approx(48.0)
    assert m["memory_gib_hours_requested"] == pytest.approx(96.0)
    assert m["autopilot_memory_relative_slack"] == pytest.approx(0.5)
    assert list(m) == list(METRIC_NAMES)


def test_step_up_falls_short_after_the_step() -> None:
    windows = days(3)
    cpu = np.where(windows < 1.5 * PER_DAY, 0.5, 1.5)
    m = fixed_run(history(cpu), 1.0, 2 * GIB)
    evaluated = 2 * PER_DAY
    short = 3 * PER_DAY - int(1.5 * PER_DAY)
    assert m["cpu_shortfall_rate"] == pytest.approx(short / evaluated)
    assert m["cpu_relative_slack"] == pytest.approx(0.5 * (evaluated - short) / evaluated)


def test_daily_sine_slack_is_one_minus_mean_over_peak() -> None:
    windows = days(4)
    cpu = 1.0 + 0.5 * np.sin(2 * np.pi * windows / PER_DAY)
    m = fixed_run(history(cpu), 1.5, 2 * GIB)
    assert m["cpu_relative_slack"] == pytest.approx(1 - 1.0 / 1.5)
    assert m["cpu_shortfall_rate"] == 0.0
    tight = fixed_run(history(cpu), 1.25, 2 * GIB)  # above 1.25 a third of each day
    assert tight["cpu_shortfall_rate"] == pytest.approx(1 / 3, abs=2 / PER_DAY)


def test_memory_leak_ooms_every_window_above_the_limit() -> None:
    windows = days(3)
    memory = 100 * MIB + windows * 0.5 * MIB  # passes 300 MiB at window 400
    m = fixed_run(history(np.full(windows.size, 0.1), memory), 1.0, 300 * MIB)
    ooms = int(np.sum((memory > 300 * MIB) & (windows >= PER_DAY)))
    assert ooms == windows.size - 401
    assert m["oom_per_container_day"] == pytest.approx(ooms / 2.0)
    peak_slack = np.maximum(300 * MIB - memory[PER_DAY:], 0).sum() / (300 * MIB * 2 * PER_DAY)
    assert m["memory_relative_slack"] == pytest.approx(peak_slack)


def test_memory_limit_keeps_the_data_limit_to_request_ratio() -> None:
    windows = days(3)
    memory = np.where(windows == 2 * PER_DAY, 3.5 * GIB, 1 * GIB)  # one spike
    frame = history(
        np.full(windows.size, 0.1), memory, memory_request=1 * GIB, memory_limit=2 * GIB
    )
    # request 2 GiB, ratio 2 -> limit 4 GiB: the 3.5 GiB spike is no OOM
    assert fixed_run(frame, 1.0, 2 * GIB)["oom_per_container_day"] == 0.0
    plain = history(np.full(windows.size, 0.1), memory)
    assert fixed_run(plain, 1.0, 2 * GIB)["oom_per_container_day"] == pytest.approx(0.5)


def test_throttled_cpu_is_replayed_as_demand() -> None:
    """A recorded history held at its limit: the replay sizes against what it wanted."""
    frame = history(np.full(3 * PER_DAY, 0.5), np.full(3 * PER_DAY, 1 * GIB))
    frame["cpu_limit"] = 0.5
    frame["cpu_throttled"] = 0.25
    m = fixed_run(frame, 1.0, 2 * GIB)
    assert m["cpu_relative_slack"] == pytest.approx(0.25)  # 0.75 used of 1.0
    assert fixed_run(frame, 0.6, 2 * GIB)["cpu_shortfall_rate"] == 1.0


def test_gaps_are_left_out_of_every_metric() -> None:
    windows = days(3)
    cpu = np.where((windows >= 2 * PER_DAY) & (windows < 2.25 * PER_DAY), np.nan, 0.5)
    result = run_backtest(history(cpu), strategies=[fixed_spec(1.0, 2 * GIB)], execution=SERIAL)
    assert result.container_days == pytest.approx(1.75)
    assert result.summary["fixed"]["cpu_core_hours_requested"] == pytest.approx(1.75 * 24)
    assert result.summary["fixed"]["cpu_relative_slack"] == pytest.approx(0.5)


class Toggling(FixedStrategy):
    """Switches CPU between 1 and 2 cores every 4 hours: 6 changes in every full day."""

    def decide(self, step: int, current: Requests) -> Requests:
        cpu = 1.0 + (step // (PER_DAY // 6)) % 2
        return Requests(np.full(self.size, cpu), np.full(self.size, GIB), current.memory_limit)


def change_rates(cpu: np.ndarray) -> np.ndarray:
    spec = StrategySpec("toggling", lambda future: Toggling(1.0, GIB, "toggling"))
    result = run_backtest(history(cpu), strategies=[spec], execution=SERIAL)
    days_of = result.per_container_day
    return (days_of["changes"] / days_of["evaluated_days"]).to_numpy()


def test_a_scrape_gap_does_not_shorten_a_day_but_the_tail_of_a_series_does() -> None:
    windows = days(3.5)
    cpu = np.full(windows.size, 0.5)
    cpu[round(1.4 * PER_DAY) : round(1.5 * PER_DAY)] = np.nan  # 2.4 h without samples
    # day 0 holds the gap (6 changes, not 6.6 a day), day 1 is whole, day 2 is the
    # last 12 h of the series (3 changes)
    assert change_rates(cpu).tolist() == pytest.approx([6.0, 6.0, 6.0])
    # a series that ends 0.7 days into its last day: 5 toggles in 202 windows
    ending = np.full(days(3.0).size + 202, 0.5)
    assert change_rates(ending)[-1] == pytest.approx(5 / (202 / PER_DAY))


def test_a_gap_across_midnight_shortens_neither_day_nor_drops_a_middle_one() -> None:
    """The days are the container's life: 8 h without samples from 20:00 to 04:00, and
    20 h from 10:00 on (a middle day whose samples stop early is no tail)."""
    cpu = np.full(days(5).size, 0.5)
    hour = PER_DAY // 24
    cpu[PER_DAY + 20 * hour : PER_DAY + 28 * hour] = np.nan
    cpu[3 * PER_DAY + 10 * hour : 3 * PER_DAY + 30 * hour] = np.nan
    assert change_rates(cpu).tolist() == pytest.approx([6.0, 6.0, 6.0, 6.0])


def test_a_containers_changes_do_not_depend_on_the_containers_replayed_beside_it() -> None:
    """A block replays every container to its end: changes a strategy makes after a
    container's last sample belong to no container-day, and used to count in its mean."""
    spec = StrategySpec("toggling", lambda future: Toggling(1.0, GIB, "toggling"))
    short = np.full(days(2).size, 0.5)
    alone = run_backtest(history(short), strategies=[spec], execution=SERIAL)
    beside = np.full((2, days(4).size), 0.5)
    beside[0, days(2).size :] = np.nan  # pod-0 ends after 2 days, pod-1 runs 4
    both = run_backtest(history(beside), strategies=[spec], execution=SERIAL)
    first = both.per_container.iloc[0]
    assert first["changes"] == alone.per_container.iloc[0]["changes"] == 6
    assert first["changes_per_container_day"] == pytest.approx(6.0)
    fleet = both.summary["toggling"]
    assert fleet["changes_per_container_day"] == pytest.approx(6.0)
    assert fleet["changes_per_container_day_p50"] == pytest.approx(6.0)


def test_the_mean_changes_per_day_counts_the_days_a_gap_holds() -> None:
    """The mean and its median agree when half the windows of a day have no sample."""
    cpu = np.full(days(3).size, 0.5)
    cpu[PER_DAY + 1 : 3 * PER_DAY - 1 : 2] = np.nan  # every other window of the last 2 days
    spec = StrategySpec("toggling", lambda future: Toggling(1.0, GIB, "toggling"))
    fleet = run_backtest(history(cpu), strategies=[spec], execution=SERIAL).summary["toggling"]
    assert fleet["changes_per_container_day"] == pytest.approx(6.0)
    assert fleet["changes_per_container_day_p50"] == pytest.approx(6.0)


def test_grouped_quantile_matches_numpy() -> None:
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 5, size=200)
    values = rng.normal(size=200)
    got = grouped_quantile(groups, values, 0.95, 6)
    for group in range(5):
        assert got[group] == pytest.approx(np.quantile(values[groups == group], 0.95))
    assert np.isnan(got[5])
