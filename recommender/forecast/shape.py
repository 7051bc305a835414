"""What kind of usage a container has, detected from its own history.

A cycle is used only when the data shows it (autocorrelation at one day or one week,
over at least two cycles). Batch containers are told by their on/off shape: long idle
and long busy stretches near the peak, a job taking all the CPU it gets until done.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from recommender.forecast.quantiles import error_quantiles
from recommender.forecast.settings import DAY, ForecastSettings

MIN_SEASON_CYCLES = 2.0
IDLE_FRACTION = 0.1  # usage below this share of the peak counts as idle
BUSY_FRACTION = 0.5  # usage above this share of the peak counts as busy
BATCH_MIN_IDLE = 0.1  # share of windows idle, for an on/off (batch) shape
BATCH_MIN_BUSY = 0.02  # share of windows busy, for an on/off (batch) shape
BATCH_MIN_PERSISTENCE = 0.7  # lag-1 autocorrelation: busy and idle come in runs
BATCH_MAX_BETWEEN = 0.55  # share of windows between idle and busy: on/off jumps, a cycle glides


@dataclass(frozen=True)
class ShapeReport:
    """Per-series findings, arrays of shape (series,)."""

    period: np.ndarray  # blocks per cycle in use: 1 (none), one day or one week
    daily_acf: np.ndarray
    weekly_acf: np.ndarray
    trend_per_day: np.ndarray  # least-squares slope of daily means / mean level
    burstiness: np.ndarray  # p99 / median of the sample windows
    batch: np.ndarray  # bool: on/off, throughput-bound shape


def autocorrelation(x: np.ndarray, lag: int) -> np.ndarray:
    """Autocorrelation at `lag` of each row, NaN-aware, as statsmodels `acf(adjusted=True)`
    estimates it (NaN with fewer than `lag` pairs or a constant row)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        centred = x - np.nanmean(x, axis=1, keepdims=True)
        head, tail = centred[:, :-lag] if lag else centred, centred[:, lag:]
        products = head * tail
        pairs = np.sum(~np.isnan(products), axis=1)
        covariance = np.nansum(products, axis=1) / pairs
        variance = np.nanmean(centred**2, axis=1)
        result = covariance / variance
    return np.where((pairs >= max(lag, 2)) & (variance > 0), result, np.nan)


def _trend_per_day(blocks: np.ndarray, day_blocks: int) -> np.ndarray:
    n, length = blocks.shape
    days = length // day_blocks
    if days < 2:
        return np.zeros(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        daily = np.nanmean(blocks[:, length - days * day_blocks :].reshape(n, days, -1), axis=2)
        x = np.arange(days, dtype=np.float64)[None, :] + np.zeros_like(daily)
        x = np.where(np.isnan(daily), np.nan, x)
        xc = x - np.nanmean(x, axis=1, keepdims=True)
        slope = np.nansum(xc * (daily - np.nanmean(daily, axis=1, keepdims=True)), axis=1)
        slope = slope / np.nansum(xc**2, axis=1)
        level = np.nanmean(daily, axis=1)
        relative = slope / level
    return np.where(np.isfinite(relative), relative, 0.0)


def _on_off(windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Burstiness and the batch flag from raw sample windows."""
    peak = error_quantiles(windows, (0.99,))[0][:, 0]
    median = error_quantiles(windows, (0.5,))[0][:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        valid = np.sum(~np.isnan(windows), axis=1)
        idle = np.sum(windows < IDLE_FRACTION * peak[:, None], axis=1) / valid
        busy = np.sum(windows > BUSY_FRACTION * peak[:, None], axis=1) / valid
    between = 1.0 - idle - busy
    burstiness = np.where(median > 0, peak / np.where(median > 0, median, 1.0), np.inf)
    burstiness = np.where(np.isnan(peak), 1.0, burstiness)
    persistence = np.nan_to_num(autocorrelation(windows, 1))
    batch = (
        (idle >= BATCH_MIN_IDLE)
        & (busy >= BATCH_MIN_BUSY)
        & (persistence >= BATCH_MIN_PERSISTENCE)
        & (between <= BATCH_MAX_BETWEEN)
        & (peak > 0)
    )
    return burstiness, batch


def detect_shape(
    windows: np.ndarray, blocks: np.ndarray, period_seconds: int, settings: ForecastSettings
) -> ShapeReport:
    """Cycles, trend, burstiness and the batch shape of each series, from its `windows`
    and its block means `blocks` on the grid of `period_seconds`."""
    day_blocks = max(1, round(DAY / period_seconds))
    week_blocks = 7 * day_blocks
    seen = ~np.isnan(blocks)  # history: the days from a series' first block to its last
    span = blocks.shape[1] - np.argmax(seen[:, ::-1], axis=1) - np.argmax(seen, axis=1)
    history = np.where(seen.any(axis=1), span, 0) * period_seconds / DAY
    daily = autocorrelation(blocks, day_blocks) if day_blocks > 1 else np.full(len(blocks), 0.0)
    weekly = autocorrelation(blocks, week_blocks)
    threshold = settings.model.season_threshold
    has_daily = (history >= MIN_SEASON_CYCLES) & (np.nan_to_num(daily, nan=-1.0) >= threshold)
    has_weekly = (
        (history >= MIN_SEASON_CYCLES * 7)
        & (np.nan_to_num(weekly, nan=-1.0) >= threshold)
        & (np.nan_to_num(weekly, nan=-1.0) >= np.nan_to_num(daily) + settings.model.weekly_gain)
    )
    period = np.where(
        has_weekly, week_blocks, np.where(has_daily & (day_blocks > 1), day_blocks, 1)
    )
    burstiness, batch = _on_off(windows)
    return ShapeReport(
        period=period.astype(np.int64),
        daily_acf=daily,
        weekly_acf=weekly,
        trend_per_day=_trend_per_day(blocks, day_blocks),
        burstiness=burstiness,
        batch=batch,
    )
