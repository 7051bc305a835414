"""Forecast settings from NAME=VALUE text: every type read, every mistake named."""

from __future__ import annotations

import pickle

import pytest

from recommender.backtest.registry import make_forecast, resolve_strategies, with_forecast_settings
from recommender.backtest.settings import BacktestInputError
from recommender.forecast.settings import ForecastSettings, ForecastSettingsError
from recommender.forecast.strategy import ForecastStrategy
from recommender.overrides import SettingsError, settings_with


def forecast_with(pairs: list[str], base: ForecastSettings | None = None) -> ForecastSettings:
    return settings_with(pairs, base or ForecastSettings(), "forecast")


def test_each_kind_of_setting_is_read_by_its_declared_type() -> None:
    settings = forecast_with(
        [
            "target_cpu_shortfall=0.01",
            "max_changes_per_day=4",
            "cpu_shortfall_mode=fixed",
            "model.level_alphas=0.1, 0.5",
            "lulls.follow=false",
            "spikes.after_windows=3",
        ]
    )
    default = ForecastSettings()
    assert settings.target_cpu_shortfall == 0.01
    assert settings.max_changes_per_day == 4
    assert settings.cpu_shortfall_mode == "fixed"
    assert settings.model.level_alphas == (0.1, 0.5)
    assert settings.lulls.follow is False
    assert settings.lulls.after_windows == default.lulls.after_windows  # the rest of a group stays
    assert settings.spikes.after_windows == 3
    assert settings.memory_margin == default.memory_margin
    assert forecast_with([]) == default


def test_a_later_pair_wins_and_a_base_is_kept() -> None:
    base = ForecastSettings(memory_margin=0.3)
    settings = forecast_with(["reactions.react_margin=0.2", "reactions.react_margin=0.3"], base)
    assert settings.reactions.react_margin == 0.3 and settings.memory_margin == 0.3


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("targt_cpu_shortfall=0.01", "did you mean target_cpu_shortfall"),
        ("lulls.folow=true", "did you mean lulls.follow"),
        ("lulls=true", "unknown forecast setting 'lulls'"),
        ("target_cpu_shortfall=often", "cannot read 'often'"),
        ("lulls.follow=maybe", "expected true or false"),
        ("cpu_shortfall_mode=fast", "expected one of vpa, fixed"),
        ("max_changes_per_day=2.5", "cannot read '2.5'"),
        ("memory_margin=inf", "cannot read 'inf' (expected a finite number)"),
        ("reactions.react_margin=nan", "cannot read 'nan' (expected a finite number)"),
        ("model.level_alphas=0.5,inf", "cannot read 'inf' (expected a finite number)"),
        ("target_cpu_shortfall=0.9", "target_cpu_shortfall must be in (0, 0.5)"),
        ("lulls.after_windows=0", "after_windows must be at least 1"),
        # a billion days ended in an OverflowError or a MemoryError
        ("history_days=1000000000", r"history_days must be in \[1, 366\]"),
        ("memory.memory_peak_days=1e308", "memory_peak_days must span at most 366 days"),
        ("memory.memory_recent_hours=1000000000", "memory_recent_hours must span at most 366 days"),
        ("no_value_given", "expected NAME=VALUE"),
    ],
)
def test_mistakes_are_errors_that_name_the_setting(pair: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        forecast_with([pair])


def test_a_backtest_runs_the_forecast_on_the_given_settings() -> None:
    settings = forecast_with(["max_changes_per_day=3"])
    specs = with_forecast_settings(resolve_strategies("vpa,forecast"), settings)
    assert specs[0].factory is resolve_strategies("vpa")[0].factory  # others untouched
    factory = pickle.loads(pickle.dumps(specs[1].factory))  # workers get it pickled
    strategy = factory(None)
    assert isinstance(strategy, ForecastStrategy)
    assert strategy.settings.max_changes_per_day == 3
    assert make_forecast(None).settings == ForecastSettings()  # type: ignore[arg-type, attr-defined]
    with pytest.raises(BacktestInputError, match="forecast strategy is not run"):
        with_forecast_settings(resolve_strategies("vpa,krr"), settings)


def test_an_update_period_must_hold_whole_sample_windows() -> None:
    """7-minute periods on 5-minute data were once rounded to 5 minutes, silently."""
    assert ForecastSettings().windows_per_block(300) == 12
    assert ForecastSettings(update_period_seconds=5400).windows_per_block(300) == 18
    for step in (420, 7200):  # 420 s does not divide an hour; 2 h samples are coarser
        with pytest.raises(ForecastSettingsError, match="whole number"):
            ForecastSettings().windows_per_block(step)
