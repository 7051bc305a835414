"""The perfect-forecast reference: true block means in place of the forecasts."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.backtest import ExecutionSettings, run_backtest
from recommender.backtest.registry import (
    resolve_strategies,
    with_forecast_settings,
)
from recommender.data.arrays import UsageArrays
from recommender.explanations import reasons
from recommender.forecast.blocks import KnownLevels
from recommender.forecast.memory import OomHistory
from recommender.forecast.planner import make_plan
from recommender.forecast.settings import ForecastSettings
from tests.recommender.backtest.helpers import history
from tests.recommender.forecast import synthetic as syn

HOUR_WINDOWS = 12


def test_block_means_are_looked_up_by_key_and_unknown_ones_are_nan() -> None:
    cpu = np.vstack([np.arange(48, dtype=float), np.full(48, 2.0)])
    usage = syn.fleet(list(cpu))
    levels = KnownLevels.of(usage, HOUR_WINDOWS)
    first = syn.START // 3600
    assert levels.first_block == first
    reversed_keys = syn.keys(3).iloc[[2, 1, 0]].reset_index(drop=True)  # pod-2 is unknown
    got = levels.aligned(reversed_keys).lookup(np.array([first - 1, first, first + 3, first + 4]))
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1, 1:3], [2.0, 2.0])
    np.testing.assert_allclose(got[2, 1:3], [5.5, 41.5])  # means of windows 0-11, 36-47
    assert np.isnan(got[1:, [0, 3]]).all()  # before and after the history


def test_the_plan_forecasts_the_true_means_of_the_coming_blocks() -> None:
    whole = syn.fleet([syn.daily(4), syn.noise(4)])
    past_windows = 3 * syn.PER_DAY
    cut = slice(0, past_windows)
    seen = UsageArrays(whole.keys, whole.start, whole.step, whole.cpu[:, cut], whole.memory[:, cut])
    settings = ForecastSettings()
    levels = KnownLevels.of(whole, settings.windows_per_block(syn.STEP))
    plan = make_plan(seen, OomHistory.empty(2), settings, levels=levels)
    truth = whole.cpu[:, past_windows:].reshape(2, 24, HOUR_WINDOWS).mean(axis=2)
    np.testing.assert_allclose(plan.cpu_forecast, np.maximum(truth, 0.0))
    assert (plan.model == "known levels").all()
    assert "true mean" in reasons(plan, OomHistory.empty(2), settings)["explanation"][0]
    blind = make_plan(seen, OomHistory.empty(2), settings)
    assert not np.allclose(blind.cpu_forecast, plan.cpu_forecast)
    two_hours = KnownLevels.of(whole, 2 * HOUR_WINDOWS)
    with pytest.raises(ValueError, match="another block grid"):
        make_plan(seen, OomHistory.empty(2), settings, levels=two_hours)


def _random_levels(series: int = 4, days: int = 6) -> np.ndarray:
    """Levels drawn at random every 3 hours: no forecast can know the next one."""
    out = []
    for seed in range(series):
        rng = np.random.default_rng(seed)
        levels = rng.choice([0.3, 1.0, 2.0], size=days * 8)
        out.append(np.repeat(levels, 36) * rng.uniform(0.9, 1.1, days * 8 * 36))
    return np.vstack(out)


def test_knowing_the_levels_cuts_the_slack_an_unpredictable_load_forces() -> None:
    frame = history(_random_levels())
    specs = resolve_strategies("forecast,forecast-perfect")
    result = run_backtest(frame, None, strategies=specs, execution=ExecutionSettings(workers=1))
    blind, perfect = result.summary["forecast"], result.summary["forecast-perfect"]
    assert perfect["cpu_relative_slack"] < 0.75 * blind["cpu_relative_slack"]
    assert perfect["cpu_shortfall_rate"] <= blind["cpu_shortfall_rate"]
    assert perfect["changes_per_container_day_p99"] <= ForecastSettings().max_changes_per_day


def test_forecast_settings_apply_to_the_perfect_reference_too() -> None:
    settings = ForecastSettings(max_changes_per_day=3)
    specs = with_forecast_settings(resolve_strategies("vpa,forecast-perfect"), settings)
    assert specs[1].factory.keywords == {"settings": settings}  # type: ignore[attr-defined]
    frame = history(_random_levels(series=2, days=4))
    result = run_backtest(frame, None, strategies=specs, execution=ExecutionSettings(workers=1))
    assert result.summary["forecast-perfect"]["changes_per_container_day_p99"] <= 3


def test_the_reference_is_listed_with_the_builtin_strategies() -> None:
    (spec,) = resolve_strategies("forecast-perfect")
    assert "true mean" in spec.description


def test_levels_for_other_series_than_the_plan_are_an_error() -> None:
    whole = syn.fleet([syn.daily(2), syn.noise(2)])
    settings = ForecastSettings()
    levels = KnownLevels.of(whole, settings.windows_per_block(syn.STEP))
    one = syn.fleet([syn.daily(2)])
    with pytest.raises(ValueError, match="series"):
        make_plan(one, OomHistory.empty(1), settings, levels=levels)
