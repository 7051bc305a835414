"""Cycles are detected, not assumed; batch jobs are told from serving ones."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.tsa.stattools import acf

from recommender.explanations import season_name, workload_class
from recommender.forecast.blocks import as_blocks, layout_for
from recommender.forecast.quantiles import gapless_mean
from recommender.forecast.settings import ForecastSettings
from recommender.forecast.shape import autocorrelation, detect_shape
from tests.recommender.forecast import synthetic as syn


def _shape(series: list[np.ndarray]):
    usage = syn.fleet(series)
    layout = layout_for(usage.start, usage.step, usage.n_windows, 12)
    blocks = gapless_mean(as_blocks(usage.cpu, layout), axis=2)
    return detect_shape(usage.cpu, blocks, layout.period, ForecastSettings())


@pytest.mark.parametrize("lag", [1, 24, 50])
def test_autocorrelation_is_statsmodels_adjusted_acf(lag: int) -> None:
    x = syn.daily(5, noise=0.2)[::12]
    ours = autocorrelation(x[None, :], lag)[0]
    reference = acf(x, nlags=lag, adjusted=True, fft=False)[lag]
    assert ours == pytest.approx(reference, abs=1e-12)


def test_autocorrelation_ignores_missing_samples() -> None:
    x = syn.daily(6, noise=0.1)[::12].copy()
    holed = x.copy()
    holed[::7] = np.nan
    full, with_holes = autocorrelation(np.vstack([x, holed]), 24)
    assert with_holes == pytest.approx(full, abs=0.1)
    assert with_holes > 0.8


def test_daily_cycle_is_found_and_noise_is_left_stationary() -> None:
    report = _shape([syn.daily(6), syn.noise(6)])
    assert season_name(report, 24).tolist() == ["daily", "none"]
    assert report.daily_acf[0] > 0.8 > abs(report.daily_acf[1]) + 0.6


def test_a_cycle_needs_two_days_of_history() -> None:
    report = _shape([syn.daily(1.5)])
    assert report.period[0] == 1


def test_weekly_cycle_needs_two_weeks_and_must_add_to_the_daily_one() -> None:
    days = 15
    base = syn.daily(days)
    weekday = (np.arange(base.size) // syn.PER_DAY) % 7
    weekly = base * np.where(weekday >= 5, 0.2, 1.0)  # quiet weekends
    report = _shape([weekly, base])
    assert season_name(report, 24).tolist() == ["weekly", "daily"]
    short = _shape([weekly[: 10 * syn.PER_DAY]])
    assert season_name(short, 24).tolist() == ["daily"]


def test_on_off_jobs_are_batch_and_a_cycle_is_serving() -> None:
    report = _shape([syn.on_off(6), syn.daily(6), syn.noise(6)])
    assert workload_class(report).tolist()[0] == "batch"
    assert workload_class(report).tolist()[1:] == ["serving", "serving"]


def test_a_deep_smooth_cycle_is_serving_not_on_off() -> None:
    # a daily cycle whose trough falls under a tenth of the peak, on a level that
    # grows day by day, has idle and busy windows and long runs like an on/off job,
    # but it glides through the band between them; sized on its mean as a batch
    # job, with no margin, it was short on every afternoon ramp (synthetic drifting
    # cycles: shortfall 0.0195 -> 0.0180)
    days = 7
    t = np.arange(days * syn.PER_DAY)
    growth = 1.25 ** (t / syn.PER_DAY)
    cycle = growth * (1.0 + 0.9 * np.sin(2 * np.pi * t / syn.PER_DAY))
    report = _shape([cycle, syn.on_off(days)])
    assert report.batch.tolist() == [False, True]
    # the rule that tells them apart: the on/off shape alone rarely sits between
    peak = np.quantile(cycle, 0.99)
    between = np.mean((cycle >= 0.1 * peak) & (cycle <= 0.5 * peak))
    assert between > 0.55


def test_a_batch_vm_running_long_jobs_stays_batch() -> None:
    # a week of long jobs, idle a sixth of the time: still on/off, so the idle hours
    # after the next job are followed rather than waited out at the busy request
    days = 7
    cpu = np.full(days * syn.PER_DAY, 8.0)
    for day in range(days):
        start = day * syn.PER_DAY + 8 * 12  # four idle hours a day
        cpu[start : start + 4 * 12] = 0.02
    report = _shape([cpu])
    idle = np.mean(cpu < 1.0)
    assert 0.1 < idle < 0.2
    assert report.batch.tolist() == [True]
    # a serving container with the odd quiet spell is not
    spells = syn.noise(days).copy()
    spells[: syn.PER_DAY // 4] = 0.0
    assert _shape([spells]).batch.tolist() == [False]


def test_a_short_daily_job_is_on_off() -> None:
    # idle all day but for a 30 minute job every night (2 % of windows): an on/off
    # container, whose request should follow the job rather than hold a planned
    # raise for hours after it; a single such job in a week is not
    days = 7
    nightly = np.full(days * syn.PER_DAY, 0.02)
    for day in range(days):
        start = day * syn.PER_DAY + 22 * 12 + 6
        nightly[start : start + 6] = 0.7
    once = np.full(days * syn.PER_DAY, 0.02)
    once[100:106] = 0.7
    assert _shape([nightly, once]).batch.tolist() == [True, False]
