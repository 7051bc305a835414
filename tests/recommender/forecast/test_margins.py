"""Conformal margins replayed on the policy that uses them."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.forecast.allocation import Offer, allocate
from recommender.forecast.margins import ReactionRule, calibrate
from recommender.forecast.quantiles import error_quantiles

NO_REACTIONS = ReactionRule(after_windows=10**6, margin=0.1, per_day=24.0, min_fraction=0.0)


@pytest.mark.parametrize("level", [0.5, 0.9, 0.99, 1.0])
def test_error_quantiles_are_observed_values_like_numpy_higher(level: float) -> None:
    rng = np.random.default_rng(0)
    errors = rng.normal(size=(3, 500))
    errors[1, ::3] = np.nan
    ours, count = error_quantiles(errors, (level,))
    for row in range(3):
        values = errors[row][~np.isnan(errors[row])]
        assert ours[row, 0] == np.quantile(values, level, method="higher")
        assert count[row] == values.size


def _noise_fleet(blocks: int = 24 * 7, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    usage = rng.gamma(4.0, 0.1, size=(1, blocks, 12))
    forecast = np.full((1, blocks), 0.4)
    return usage, forecast


def test_replayed_shortfall_meets_the_target_on_pure_noise() -> None:
    usage, forecast = _noise_fleet()
    states = np.zeros(forecast.shape, dtype=np.int64)
    result = calibrate(usage, forecast, states, np.array([1.0]), 0.02, 0.1, NO_REACTIONS, 24)
    margin = result.margin[0, 0]
    realised = np.mean(usage > (forecast[:, :, None] + margin) * (1 + 1e-9))  # ties are not short
    assert realised <= 0.02
    assert realised >= 0.005  # and does not buy far more cover than asked for


def test_a_job_starting_mid_block_costs_a_reaction_not_a_day_long_margin() -> None:
    blocks = 24 * 7
    usage = np.full((1, blocks, 12), 0.05)
    for day in range(7):  # a job starts at 10:30 each day and runs for 3 hours
        block = day * 24 + 10
        usage[0, block, 6:] = 4.0
        usage[0, block + 1 : block + 3, :] = 4.0
        usage[0, block + 3, :6] = 4.0
    forecast = usage[:, :, 0].copy()  # persistence: the state at the block start
    states = np.where(forecast > 1.0, 2, 0)
    react = ReactionRule(after_windows=2, margin=0.1, per_day=2.0, min_fraction=0.1)
    result = calibrate(usage, forecast, states, np.array([4.0]), 0.01, 0.1, react, 24)
    assert result.margin[0, 0] < 0.5  # idle blocks do not carry the job's 4 cores
    assert result.reactions_per_day[0, 0] == pytest.approx(1.0)


def test_the_fleet_price_spends_shortfalls_where_margin_is_expensive() -> None:
    # series 0: covering its last shortfalls costs 100 core-windows; series 1: 1
    levels = np.array([0.0, 1.0, 2.0])
    offer = Offer(
        cost=np.array([[levels * 100.0], [levels * 1.0]]),
        shortfalls=np.array([[[20.0, 10.0, 0.0]], [[20.0, 10.0, 0.0]]]),
        reactions=np.zeros((2, 1, 3)),
        windows=np.array([1000.0, 1000.0]),
    )
    choice, price = allocate(offer, target=0.01, cap=0.5, budget=6.0)
    assert choice[:, 0].tolist() == [0, 2]  # the expensive one keeps all 20, the cheap none
    assert price[0] == price[1]


def test_no_series_goes_beyond_the_cap() -> None:
    offer = Offer(
        cost=np.array([[[0.0, 50.0, 100.0]], [[0.0, 1.0, 2.0]]]),
        shortfalls=np.array([[[80.0, 40.0, 0.0]], [[20.0, 10.0, 0.0]]]),
        reactions=np.zeros((2, 1, 3)),
        windows=np.array([1000.0, 1000.0]),
    )
    choice, _ = allocate(offer, target=0.05, cap=0.05, budget=6.0)
    assert offer.shortfalls[0, 0, choice[0, 0]] <= 50.0


def test_reactions_stay_within_the_budget() -> None:
    offer = Offer(
        cost=np.array([[[0.0, 10.0, 20.0]]]),
        shortfalls=np.array([[[1.0, 1.0, 1.0]]]),
        reactions=np.array([[[5.0, 2.0, 0.0]]]),
        windows=np.array([1000.0]),
    )
    choice, _ = allocate(offer, target=0.01, cap=0.1, budget=2.0)
    assert choice[0, 0] == 1
