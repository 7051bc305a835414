"""Additive Holt-Winters (damped trend) run over thousands of series at once.

statsmodels fits one series at a time, far too slowly for a fleet; here one loop over
blocks runs numpy over all series and a few level-smoothing candidates at once. The
equations are statsmodels' `ExponentialSmoothing(trend="add", damped_trend=True,
seasonal="add")`:

    level_t  = alpha (y_t - s_{t-m}) + (1 - alpha) (level_{t-1} + phi trend_{t-1})
    trend_t  = beta (level_t - level_{t-1}) + (1 - beta) phi trend_{t-1}
    season_t = gamma (y_t - level_{t-1} - phi trend_{t-1}) + (1 - gamma) s_{t-m}

Each series has its own cycle length m (1 = no cycle); a season slot is the absolute
block number modulo m (slot 9 of a daily cycle is 09:00 UTC). A block without data
leaves the season alone and lets level and trend coast.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SmoothingParams:
    """Smoothing parameters shared by all series (alphas are candidates)."""

    alphas: tuple[float, ...]
    beta: float
    gamma: float
    phi: float


@dataclass(frozen=True)
class HoltWintersFit:
    """State after the last block, the `alpha` each series uses, and the one-step
    forecasts that led there (NaN while a series initialises)."""

    one_step: np.ndarray
    alpha: np.ndarray
    level: np.ndarray
    trend: np.ndarray
    season: np.ndarray
    period: np.ndarray
    phi: float

    def forecast(self, first_block_id: int, steps: int) -> np.ndarray:
        """Forecasts of `steps` blocks from `first_block_id`, the one after the last fitted."""
        h = np.arange(1, steps + 1, dtype=np.float64)
        damp = h if self.phi == 1.0 else np.cumsum(self.phi**h)
        ids = first_block_id + np.arange(steps, dtype=np.int64)
        slots = ids[None, :] % self.period[:, None]
        seasonal = np.take_along_axis(self.season, slots, axis=1)
        return self.level[:, None] + damp[None, :] * self.trend[:, None] + seasonal


def initial_state(
    y: np.ndarray, block_ids: np.ndarray, period: np.ndarray, max_period: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Level, trend and season from each series' first cycle (missing values count as 0)."""
    n, blocks = y.shape
    first = np.arange(blocks)[None, :] < period[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        level = np.nanmean(np.where(first, y, np.nan), axis=1)
    level = np.nan_to_num(level)
    season = np.zeros((n, max_period))
    rows, cols = np.nonzero(first & (period[:, None] > 1))
    deviation = np.nan_to_num(y[rows, cols] - level[rows])
    season[rows, block_ids[cols] % period[rows]] = deviation
    return level, np.zeros(n), season


@dataclass(frozen=True)
class HoltWintersCandidates:
    """The recursion run once per level-smoothing candidate: arrays (series, candidates, ...)."""

    one_step: np.ndarray  # (series, candidates, blocks), NaN while initialising
    alphas: np.ndarray  # (candidates,)
    level: np.ndarray
    trend: np.ndarray
    season: np.ndarray  # (series, candidates, max period)
    period: np.ndarray  # (series,)
    phi: float

    def pick(self, choice: np.ndarray) -> HoltWintersFit:
        """The fit of candidate `choice[i]` for each series i."""
        rows = np.arange(self.one_step.shape[0])
        return HoltWintersFit(
            one_step=self.one_step[rows, choice],
            alpha=self.alphas[choice],
            level=self.level[rows, choice],
            trend=self.trend[rows, choice],
            season=self.season[rows, choice],
            period=self.period.astype(np.int64),
            phi=self.phi,
        )


def fit(
    y: np.ndarray, block_ids: np.ndarray, period: np.ndarray, params: SmoothingParams
) -> HoltWintersCandidates:
    """Run the recursion over `y` (series, blocks) for every alpha candidate at once (the
    first cycle initialises); which candidate a series keeps is the caller's choice."""
    from recommender.kernels.holtwinters import run_blocks  # numba: only when fitting

    n, blocks = y.shape
    alphas = np.asarray(params.alphas, dtype=np.float64)
    k = alphas.shape[0]
    max_period = int(max(1, period.max(initial=1)))
    level0, trend0, season0 = initial_state(y, block_ids, period, max_period)
    level = np.repeat(level0[:, None], k, axis=1)
    trend = np.repeat(trend0[:, None], k, axis=1)
    # season rows (series x slot, candidates): a block reads and writes one row per series
    season_rows = np.repeat(season0[:, :, None], k, axis=2).reshape(n * max_period, k)
    slot_rows = np.arange(n)[None, :] * max_period + block_ids[:, None] % period[None, :]
    gamma = np.where(period > 1, params.gamma, 0.0).astype(np.float64)
    active = np.arange(blocks)[None, :] >= period[:, None]
    # While a series initialises its trend is 0, so level + phi * trend is its level:
    # the unseen branch also leaves an initialising series unchanged.
    seen = (active & ~np.isnan(y)).T
    one_step = run_blocks(
        np.ascontiguousarray(y.T, dtype=np.float64), np.ascontiguousarray(seen),
        np.ascontiguousarray(active.T), np.ascontiguousarray(slot_rows, dtype=np.int64),
        alphas, gamma, float(params.beta), float(params.phi), level, trend, season_rows,
    )  # fmt: skip
    return HoltWintersCandidates(
        one_step=one_step,
        alphas=alphas,
        level=level,
        trend=trend,
        season=season_rows.reshape(n, max_period, k).transpose(0, 2, 1),
        period=period.astype(np.int64),
        phi=params.phi,
    )
