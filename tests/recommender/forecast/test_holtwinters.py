"""The vectorised Holt-Winters against statsmodels on the same series."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.tsa.holtwinters import ExponentialSmoothing

from recommender.forecast.holtwinters import SmoothingParams, fit, initial_state

ALPHA, BETA, GAMMA, PHI = 0.4, 0.05, 0.2, 0.9


def _series(blocks: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = np.arange(5000, 5000 + blocks)
    daily = 5 + 2 * np.sin(2 * np.pi * ids / 24) + rng.normal(0, 0.3, blocks)
    flat = 3 + 0.01 * np.arange(blocks) + rng.normal(0, 0.5, blocks)
    return np.vstack([daily, flat]), ids


def _statsmodels(y: np.ndarray, ids: np.ndarray, period: int, level0: float, season0: np.ndarray):
    seasonal = period > 1
    model = ExponentialSmoothing(
        y[period:],
        trend="add",
        damped_trend=True,
        seasonal="add" if seasonal else None,
        seasonal_periods=period if seasonal else None,
        initialization_method="known",
        initial_level=level0,
        initial_trend=0.0,
        initial_seasonal=[season0[ids[period + j] % period] for j in range(period)]
        if seasonal
        else None,
    )
    smoothing = {"smoothing_seasonal": GAMMA} if seasonal else {}
    return model.fit(
        smoothing_level=ALPHA,
        smoothing_trend=BETA,
        damping_trend=PHI,
        optimized=False,
        **smoothing,
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_one_step_forecasts_match_statsmodels_exactly(seed: int) -> None:
    y, ids = _series(24 * 6, seed)
    period = np.array([24, 1])
    candidates = fit(y, ids, period, SmoothingParams((ALPHA,), BETA, GAMMA, PHI))
    ours = candidates.pick(np.zeros(2, dtype=np.int64))
    level0, _, season0 = initial_state(y, ids, period, 24)
    for row, m in enumerate(period):
        reference = _statsmodels(y[row], ids, int(m), level0[row], season0[row])
        np.testing.assert_allclose(ours.one_step[row, m:], reference.fittedvalues, atol=1e-9)
        assert np.isnan(ours.one_step[row, :m]).all()  # initialisation blocks have none


def test_multi_step_forecasts_match_statsmodels_within_a_cycle() -> None:
    y, ids = _series(24 * 6, 3)
    period = np.array([24, 1])
    ours = fit(y, ids, period, SmoothingParams((ALPHA,), BETA, GAMMA, PHI)).pick(np.zeros(2, int))
    level0, _, season0 = initial_state(y, ids, period, 24)
    ahead = ours.forecast(int(ids[-1]) + 1, 30)
    daily = _statsmodels(y[0], ids, 24, level0[0], season0[0]).forecast(30)
    flat = _statsmodels(y[1], ids, 1, level0[1], season0[1]).forecast(30)
    np.testing.assert_allclose(ahead[1], flat, atol=1e-9)
    # statsmodels reuses the season slot of the last observation from before its
    # update at exactly one cycle ahead; every other horizon is identical
    same = np.arange(30) != 23
    np.testing.assert_allclose(ahead[0, same], daily[same], atol=1e-9)
    assert abs(ahead[0, 23] - daily[23]) > 1e-6


def test_each_candidate_alpha_is_its_own_statsmodels_fit() -> None:
    y, ids = _series(24 * 5, 4)
    y = y[1:]  # the non-seasonal series
    period = np.array([1])
    alphas = (0.1, 0.5, 0.9)
    candidates = fit(y, ids, period, SmoothingParams(alphas, BETA, GAMMA, PHI))
    level0, _, _season0 = initial_state(y, ids, period, 1)
    for k, alpha in enumerate(alphas):
        model = ExponentialSmoothing(
            y[0, 1:],
            trend="add",
            damped_trend=True,
            initialization_method="known",
            initial_level=level0[0],
            initial_trend=0.0,
        ).fit(smoothing_level=alpha, smoothing_trend=BETA, damping_trend=PHI, optimized=False)
        np.testing.assert_allclose(candidates.one_step[0, k, 1:], model.fittedvalues, atol=1e-9)


def test_a_block_without_data_lets_level_coast_and_keeps_the_season() -> None:
    y, ids = _series(24 * 4, 5)
    gap = y.copy()
    gap[:, 60] = np.nan
    params = SmoothingParams((ALPHA,), BETA, GAMMA, PHI)
    period = np.array([24, 1])
    with_gap = fit(gap, ids, period, params).pick(np.zeros(2, int))
    assert np.isfinite(with_gap.one_step[:, 61:]).all()
    full = fit(y, ids, period, params).pick(np.zeros(2, int))
    np.testing.assert_allclose(with_gap.one_step[:, :61], full.one_step[:, :61])
