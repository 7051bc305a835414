"""Conformal margins replayed on the policy that uses them."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.forecast.allocation import Offer, allocate
from recommender.forecast.margins import calibrate, replay_margins
from recommender.forecast.quantiles import error_quantiles
from recommender.forecast.settings import ReactionSettings

NO_REACTIONS = ReactionSettings(
    react_after_windows=10**6, react_margin=0.1, reactions_per_day=24.0, react_min_fraction=0.0
)


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


def _replay_one_block(
    values: np.ndarray, request: float, clearly: float, rule: ReactionSettings
) -> tuple[int, int]:
    """The reaction policy window by window, in plain Python: (shortfalls, reactions)."""
    short = raised = run = 0
    for used in values.tolist():
        if np.isnan(used):
            continue  # no sample: never short, and the run of clear windows goes on
        short += used > request
        run = run + 1 if used > request + clearly else 0
        if run >= rule.react_after_windows:
            wanted = float(np.float32(used) * np.float32(1.0 + rule.react_margin))
            if wanted > request:
                raised += 1
                request = wanted
            run = 0
    return short, raised


@pytest.mark.parametrize("after", [1, 2, 3])
def test_replay_counts_what_a_window_by_window_replay_counts(after: int) -> None:
    rng = np.random.default_rng(after)
    n, blocks, candidates = 6, 40, 5
    level = rng.gamma(2.0, 1.0, size=(n, 1, 1)) * rng.gamma(3.0, 0.3, size=(n, blocks, 1))
    usage = level * rng.lognormal(0.0, 0.6, size=(n, blocks, 12))
    usage[rng.random(usage.shape) < 0.05] = np.nan
    forecast = np.nanmean(usage, axis=2) * rng.uniform(0.7, 1.3, size=(n, blocks))
    margins = np.sort(rng.gamma(1.0, 0.5, size=(n, candidates, blocks)), axis=1)
    scale = np.nanmax(usage.reshape(n, -1), axis=1)
    rule = ReactionSettings(
        react_after_windows=after, react_margin=0.1, reactions_per_day=2.0, react_min_fraction=0.1
    )
    shortfalls, reactions = replay_margins(usage, forecast, margins, rule, scale)
    request = np.nextafter((forecast[:, None, :] + margins).astype(np.float32), np.float32(np.inf))
    clearly = (rule.react_min_fraction * scale).astype(np.float32)
    some_reacted = False
    for s in range(n):
        for c in range(candidates):
            for b in range(blocks):
                values = usage[s, b].astype(np.float32).astype(np.float64)
                start = float(request[s, c, b])
                edge = float(np.float32(start) + clearly[s]) - start
                expected = _replay_one_block(values, start, edge, rule)
                assert (shortfalls[s, c, b], reactions[s, c, b]) == expected, (s, c, b)
                some_reacted |= expected[1] > 0
    assert some_reacted  # the window-by-window path was exercised


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
    react = ReactionSettings(
        react_after_windows=2, react_margin=0.1, reactions_per_day=2.0, react_min_fraction=0.1
    )
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
