"""Shape classes (k-means) and the pooled margins they lend to short histories."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.forecast.blocks import block_mean, layout_for
from recommender.forecast.classes import PRIOR_ERRORS, blend, pooled_quantiles, shape_classes
from recommender.forecast.margins import ReactionRule, calibrate
from recommender.forecast.settings import ForecastSettings
from recommender.forecast.shape import detect_shape
from tests.recommender.forecast import synthetic as syn


def test_kmeans_puts_batch_jobs_and_daily_cycles_in_different_classes() -> None:
    series = [syn.on_off(5, seed=s) for s in range(10)] + [syn.daily(5, seed=s) for s in range(10)]
    usage = syn.fleet(series)
    layout = layout_for(usage.start, usage.step, usage.n_windows, 12)
    shape = detect_shape(usage.cpu, block_mean(usage.cpu, layout), 3600, ForecastSettings())
    labels = shape_classes(shape)
    assert len(set(labels[:10].tolist())) == 1 and len(set(labels[10:].tolist())) == 1
    assert labels[0] != labels[10]


def test_a_small_fleet_is_one_class() -> None:
    usage = syn.fleet([syn.noise(3, seed=s) for s in range(5)])
    layout = layout_for(usage.start, usage.step, usage.n_windows, 12)
    shape = detect_shape(usage.cpu, block_mean(usage.cpu, layout), 3600, ForecastSettings())
    assert shape_classes(shape).tolist() == [0] * 5


def test_pooled_quantiles_and_the_blend() -> None:
    errors = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]])
    groups = np.zeros(errors.shape, dtype=np.int64)
    pooled = pooled_quantiles(errors, groups, np.array([0, 0]), 2, (0.5, 1.0))
    assert pooled[0, 0].tolist() == [0.5, 0.8]  # "higher" median of the eight
    assert np.isnan(pooled[0, 1]).all()  # nobody was in state 1
    own = np.array([[[1.0, 2.0], [np.nan, np.nan]]])
    count = np.array([[PRIOR_ERRORS, 0]])
    mixed = blend(own, count, pooled, np.array([0]), np.array([10.0]))
    assert mixed[0, 0].tolist() == pytest.approx([(1.0 + 5.0) / 2, (2.0 + 8.0) / 2])
    assert np.isnan(mixed[0, 1]).all()


def test_a_new_container_borrows_its_class_margin() -> None:
    rng = np.random.default_rng(0)
    blocks = 24 * 3
    usage = rng.gamma(4.0, 0.1, size=(20, blocks, 12))
    forecast = np.full((20, blocks), 0.4)
    forecast[0, :-2] = np.nan  # the newcomer: two blocks of history
    states = np.zeros((20, blocks), dtype=np.int64)
    rule = ReactionRule(after_windows=10**6, margin=0.1, per_day=24.0, min_fraction=0.0)
    scale = np.full(20, 1.0)
    alone = calibrate(usage, forecast, states, scale, 0.02, 0.1, rule, 24)
    pooled = calibrate(usage, forecast, states, scale, 0.02, 0.1, rule, 24, np.zeros(20, int))
    veteran = pooled.margin[1, 0]
    assert np.isnan(alone.margin[0, 0])  # alone: too few errors, the planner falls back
    assert pooled.margin[0, 0] == pytest.approx(veteran, rel=0.2)  # pooled: its class's
