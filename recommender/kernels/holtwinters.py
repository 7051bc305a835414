"""Holt-Winters' block loop (see `recommender.forecast.holtwinters` for the equations)."""

from __future__ import annotations

import numpy as np

from recommender.kernels.compiled import compiled


@compiled
def run_blocks(
    observed: np.ndarray,
    seen: np.ndarray,
    active: np.ndarray,
    slot_rows: np.ndarray,
    alphas: np.ndarray,
    gamma: np.ndarray,
    beta: float,
    phi: float,
    level: np.ndarray,
    trend: np.ndarray,
    season_rows: np.ndarray,
) -> np.ndarray:
    """Walk the blocks of `observed` (blocks, series), updating level and trend (series,
    candidates) and the season rows (series x slot, candidates) in place; return the
    one-step forecasts (series, candidates, blocks), NaN where a series is not `active`.
    A block a series has not `seen` lets its level and trend coast and keeps its season."""
    blocks, n = observed.shape
    k = alphas.shape[0]
    keep_level = 1.0 - alphas
    decay = (1.0 - beta) * phi
    one_step = np.empty((n, k, blocks))
    for t in range(blocks):
        for i in range(n):
            row, y = slot_rows[t, i], observed[t, i]
            weight_season, keep_season = gamma[i], 1.0 - gamma[i]
            for j in range(k):
                season_old = season_rows[row, j]
                damped = phi * trend[i, j]
                base = level[i, j] + damped
                one_step[i, j, t] = base + season_old if active[t, i] else np.nan
                if seen[t, i]:
                    new_level = alphas[j] * (y - season_old) + keep_level[j] * base
                    season_rows[row, j] = weight_season * (y - base) + keep_season * season_old
                    trend[i, j] = beta * (new_level - level[i, j]) + decay * trend[i, j]
                    level[i, j] = new_level
                else:
                    level[i, j], trend[i, j] = base, damped
    return one_step
