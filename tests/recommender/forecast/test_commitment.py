"""A level held past `cover_blocks` also covers yesterday's same hours, grown a little."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from recommender.forecast.commitment import committed_requirement, growth_since_yesterday
from recommender.forecast.settings import HOUR, ForecastSettings
from recommender.forecast.shape import ShapeReport

SETTINGS = ForecastSettings()
PER_DAY = 24


def _shape(batch: list[bool]) -> ShapeReport:
    n = len(batch)
    ones = np.ones(n)
    return ShapeReport(
        period=np.full(n, PER_DAY),
        daily_acf=ones,
        weekly_acf=np.zeros(n),
        trend_per_day=np.zeros(n),
        burstiness=ones,
        persistence=ones,
        batch=np.array(batch),
        history_days=np.full(n, 2.0),
    )


def test_growth_is_the_last_hours_over_the_same_hours_yesterday_within_bounds() -> None:
    days = np.tile(np.linspace(1.0, 2.0, PER_DAY), 2)
    blocks = np.vstack([days, days, days, np.r_[np.full(24, np.nan), days[24:]]])
    blocks[1, -3:] *= 1.1  # grew by 10 % since yesterday
    blocks[2, -3:] *= 5.0  # a burst: capped at 1.2
    blocks[0, -3:] *= 0.5  # fell: never below 1
    grown = growth_since_yesterday(blocks, PER_DAY, SETTINGS)
    np.testing.assert_allclose(grown, [1.0, 1.1, 1.2, 1.0])  # the last: yesterday unseen
    short = growth_since_yesterday(blocks[:, :10], PER_DAY, SETTINGS)
    np.testing.assert_allclose(short, 1.0)  # no yesterday: no growth


def test_only_blocks_past_the_cover_of_serving_series_take_yesterday() -> None:
    day = np.r_[np.full(12, 1.0), np.full(12, 3.0)]  # quiet mornings, busy afternoons
    blocks = np.tile(day, 2)[None, :].repeat(2, axis=0)
    block_ids = 1000 + np.arange(blocks.shape[1], dtype=np.int64)
    first = int(block_ids[-1]) + 1  # the plan starts after the last block seen
    required = np.full((2, PER_DAY), 1.2)  # a flat forecast: the cycle not caught
    margin = np.full((2, PER_DAY), 0.1)
    shape = _shape([False, True])
    out = committed_requirement(required, blocks, block_ids, first, margin, shape, HOUR, SETTINGS)
    cover = SETTINGS.hysteresis.cover_blocks
    np.testing.assert_allclose(out[0, :cover], 1.2)  # what any change covers: the forecast
    np.testing.assert_allclose(out[0, cover:12], 1.2)  # yesterday's 1.0 + 0.1 is under it
    np.testing.assert_allclose(out[0, 12:], 3.1)  # yesterday's afternoon + margin
    np.testing.assert_allclose(out[1], 1.2)  # a batch series follows its jobs instead
    off = replace(SETTINGS, hysteresis=replace(SETTINGS.hysteresis, cover_yesterday=False))
    same = committed_requirement(required, blocks, block_ids, first, margin, shape, HOUR, off)
    np.testing.assert_array_equal(same, required)
