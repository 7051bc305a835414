"""What a CPU level must cover when no change can correct it for hours.

A change that spends the last planned change of the budget holds until the budget
frees another (`schedule.budget_reach`), often half a day. Over that reach the
forecast alone is not enough cover: it may not have caught the daily cycle yet, or
the level drifts from day to day. So past the usual `cover_blocks`, a serving
series' level also covers what the same hours used a day earlier.
"""

from __future__ import annotations

import warnings

import numpy as np

from recommender.forecast.settings import DAY, ForecastSettings
from recommender.forecast.shape import ShapeReport


def committed_requirement(
    required: np.ndarray,
    blocks: np.ndarray,
    block_ids: np.ndarray,
    first_block: int,
    margin: np.ndarray,
    shape: ShapeReport,
    period: int,
    settings: ForecastSettings,
) -> np.ndarray:
    """What a level must cover in the blocks past `cover_blocks`, which only a change
    that spends the last of the budget reaches (`schedule.budget_reach`): the
    requirement, and for a serving series also the same block's mean a day earlier,
    grown as the last hours have (`growth_since_yesterday`), plus its margin. No
    change can correct that level for hours, and a forecast that has not (yet) caught
    a daily cycle, or a level that drifts from day to day, saw a flat afternoon where
    a ramp came.
    `blocks`: past block means (series, len(block_ids)) of `period` seconds each."""
    if not settings.hysteresis.cover_yesterday:
        return required
    n, horizon = required.shape
    per_day = max(1, round(DAY / period))
    index = first_block + np.arange(horizon, dtype=np.int64) - per_day - block_ids[0]
    known = (index >= 0) & (index < blocks.shape[1])
    yesterday = np.full((n, horizon), np.nan)
    yesterday[:, known] = blocks[:, index[known]]
    yesterday = yesterday * growth_since_yesterday(blocks, per_day, settings)[:, None]
    guard = yesterday + np.nan_to_num(margin)
    guard[:, : settings.hysteresis.cover_blocks] = np.nan
    guard[shape.batch] = np.nan
    return np.fmax(required, guard)


def growth_since_yesterday(
    blocks: np.ndarray, per_day: int, settings: ForecastSettings
) -> np.ndarray:
    """How much the last `cover_blocks` blocks used over the same blocks a day earlier,
    within [1, 1 + cover_yesterday_growth] (1 where unknown): a level that has grown
    since yesterday will likely keep it through the afternoon, and the bound keeps a
    burst in the last hours from lifting a whole day's cover."""
    last = min(settings.hysteresis.cover_blocks, blocks.shape[1])
    lately = blocks[:, blocks.shape[1] - last :]
    earlier = np.arange(blocks.shape[1] - last, blocks.shape[1]) - per_day
    before = np.full(lately.shape, np.nan)
    known = earlier >= 0
    before[:, known] = blocks[:, earlier[known]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ratio = np.nanmean(lately, axis=1) / np.nanmean(before, axis=1)
    top = 1.0 + settings.hysteresis.cover_yesterday_growth
    return np.clip(np.nan_to_num(ratio, nan=1.0, posinf=top), 1.0, top)
