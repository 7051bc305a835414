"""Strategy names a backtest understands, and how to build each for a block.

A factory takes the block's usage and returns a fresh strategy. Only the
oracle may look at that usage (it is the hindsight limit); real strategies
ignore it and see samples one window at a time through `observe`.

Besides the built-in names, `module.path:factory` (or `label=module.path:factory`
to choose the name results are reported under) names any importable factory
with the same signature, so a new strategy plugs in without touching this
module; `StrategySpec` values can be passed directly too.
Factories must be picklable (module-level) to run on worker processes.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from recommender.backtest.settings import BacktestInputError
from recommender.backtest.strategies.autopilot import AutopilotSettings, AutopilotStrategy
from recommender.backtest.strategies.krr import KrrSettings, KrrStrategy
from recommender.backtest.strategies.oracle import OracleSettings, OracleStrategy
from recommender.data.arrays import UsageArrays
from recommender.overrides import SettingsError, settings_with
from recommender.replay import Strategy
from tailor.durations import HOUR

if TYPE_CHECKING:
    from recommender.backtest.strategies.vpa import VpaStrategySettings
    from recommender.forecast.settings import ForecastSettings

StrategyFactory = Callable[[UsageArrays], Strategy]
DEFAULT_STRATEGIES = ("vpa", "krr", "autopilot", "oracle")
PROTOCOL = ("reset", "observe", "observe_oom", "decide")  # what a factory must return


@dataclass(frozen=True)
class StrategySpec:
    """A named way to build a strategy for one block."""

    name: str
    factory: StrategyFactory
    description: str = ""
    imported: bool = False  # named as module:function by the user, not built in
    configured: bool = False  # built in, on settings the user gave (--forecast-set, ...)
    #: CPU per container-window relative to the other built-ins. Only the order of the
    #: replay tasks reads it (the longest first, so a worker pool does not end on one long
    #: task started last); results never depend on it.
    relative_cost: float = 1.0

    def build(self, usage: UsageArrays) -> Strategy:
        """A fresh strategy for one block; something without the strategy protocol is
        the user's input gone wrong (an imported factory), not a traceback."""
        strategy = self.factory(usage)
        missing = [name for name in PROTOCOL if not callable(getattr(strategy, name, None))]
        if missing:
            raise BacktestInputError(
                f"strategy {self.name!r}: its factory returned a {type(strategy).__name__}, "
                f"without {', '.join(missing)} (see recommender/replay.py)"
            )
        return strategy


def make_vpa(future: UsageArrays, settings: VpaStrategySettings | None = None) -> Strategy:
    from recommender.backtest.strategies.vpa import VpaStrategy  # needs recommender.vpa

    return VpaStrategy(settings)


def vpa_settings() -> VpaStrategySettings:
    """The `vpa` strategy's default settings (upstream's), imported when first needed."""
    from recommender.backtest.strategies.vpa import VpaStrategySettings

    return VpaStrategySettings()


def forecast_settings() -> ForecastSettings:
    """The forecast strategy's default settings, imported when first needed."""
    from recommender.forecast.settings import ForecastSettings

    return ForecastSettings()


def make_krr(future: UsageArrays, settings: KrrSettings | None = None) -> Strategy:
    return KrrStrategy(settings)


def make_autopilot(future: UsageArrays, settings: AutopilotSettings | None = None) -> Strategy:
    return AutopilotStrategy(settings)


def make_forecast(future: UsageArrays, settings: ForecastSettings | None = None) -> Strategy:
    """The forecast strategy."""
    from recommender.forecast.strategy import ForecastStrategy  # the project's own

    return ForecastStrategy(settings)


def make_perfect_forecast(
    future: UsageArrays, settings: ForecastSettings | None = None
) -> Strategy:
    """The forecast strategy's policy handed every block's true mean CPU (hindsight):
    what a perfect forecast would buy (see `recommender.forecast.blocks.KnownLevels`)."""
    from recommender.forecast.strategy import ForecastStrategy

    return ForecastStrategy.perfect(future, settings)


FORECAST_FACTORIES = (make_forecast, make_perfect_forecast)  # what forecast settings apply to


def with_forecast_settings(
    specs: Sequence[StrategySpec], settings: ForecastSettings
) -> list[StrategySpec]:
    """`specs` with the built-in forecast strategy running on `settings` instead."""
    if not any(spec.factory in FORECAST_FACTORIES for spec in specs):
        raise BacktestInputError("forecast settings given, but the forecast strategy is not run")
    return [
        replace(spec, factory=functools.partial(spec.factory, settings=settings), configured=True)
        if spec.factory in FORECAST_FACTORIES
        else spec
        for spec in specs
    ]


BASELINE_SETTINGS: Mapping[str, tuple[Callable[..., Strategy], type]] = {
    "krr": (make_krr, KrrSettings),
    "autopilot": (make_autopilot, AutopilotSettings),
}


def baseline_settings(pairs: Sequence[str]) -> dict[str, object]:
    """Settings per baseline from STRATEGY:NAME=VALUE text (`krr:cpu_percentile=0.99`,
    `autopilot:policy.max_changes_per_day=6`), each checked; SettingsError if not."""
    grouped: dict[str, list[str]] = {}
    for pair in pairs:
        name, sep, setting = pair.partition(":")
        name = name.strip()
        if not sep or name not in BASELINE_SETTINGS:
            raise SettingsError(
                f"expected STRATEGY:NAME=VALUE with STRATEGY one of "
                f"{', '.join(BASELINE_SETTINGS)}, got {pair!r}"
            )
        grouped.setdefault(name, []).append(setting)
    return {
        name: settings_with(found, BASELINE_SETTINGS[name][1](), name)
        for name, found in grouped.items()
    }


def with_baseline_settings(
    specs: Sequence[StrategySpec], settings: Mapping[str, object]
) -> list[StrategySpec]:
    """`specs` with each named baseline (`krr`, `autopilot`) built on its settings."""
    bound: dict[Callable[..., Strategy], StrategyFactory] = {}
    for name, chosen in settings.items():
        factory = BASELINE_SETTINGS[name][0]
        if not any(spec.factory is factory for spec in specs):
            raise BacktestInputError(f"{name} settings given, but {name} is not run")
        bound[factory] = functools.partial(factory, settings=chosen)
    return [
        replace(spec, factory=bound[spec.factory], configured=True)
        if spec.factory in bound
        else spec
        for spec in specs
    ]


def make_oracle(future: UsageArrays) -> Strategy:
    return OracleStrategy(future)


def make_hourly_oracle(future: UsageArrays) -> Strategy:
    return OracleStrategy(future, OracleSettings(update_period_seconds=HOUR), name="oracle-1h")


#: The forecaster plans at every block boundary: about 3x the VPA strategy's CPU on the
#: same month (docs/results/performance.md, the backtest's forecaster), the others less.
FORECAST_RELATIVE_COST = 3.0


def builtin_strategies() -> dict[str, StrategySpec]:
    """A fresh mapping of the built-in names (never shared, never mutated)."""
    specs = (
        StrategySpec("vpa", make_vpa, "upstream VPA recommender + updater rules"),
        StrategySpec("krr", make_krr, "Robusta KRR: CPU p95 over 14 d, memory max + 15 %"),
        StrategySpec("autopilot", make_autopilot, "Google Autopilot moving window"),
        StrategySpec(
            "forecast",
            make_forecast,
            "kube-tailor's forecasting strategy",
            relative_cost=FORECAST_RELATIVE_COST,
        ),
        StrategySpec(
            "forecast-perfect",
            make_perfect_forecast,
            "forecast's policy handed each hour's true mean CPU (hindsight)",
            relative_cost=FORECAST_RELATIVE_COST,
        ),
        StrategySpec("oracle", make_oracle, "hindsight: requests = usage of each window"),
        StrategySpec("oracle-1h", make_hourly_oracle, "hindsight, resizing at most hourly"),
    )
    return {spec.name: spec for spec in specs}


def _imported(text: str) -> StrategySpec:
    label, _, name = (part.strip() for part in text.rpartition("="))
    module_name, _, attribute = name.partition(":")
    if not module_name or module_name.startswith(".") or not attribute:
        # importlib raises ValueError / TypeError for these, not ImportError
        raise BacktestInputError(f"strategy factory {name!r}: name it as module.path:function")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise BacktestInputError(f"cannot import strategy factory {name!r}: {error}") from None
    if not callable(factory):
        raise BacktestInputError(f"strategy factory {name!r} is not callable")
    return StrategySpec(label or name, factory, f"imported from {name}", imported=True)


def resolve_strategies(strategies: str | Sequence[str | StrategySpec]) -> list[StrategySpec]:
    """Specs for comma-separated names, a list of names, or ready specs; in order."""
    if isinstance(strategies, str):
        strategies = [part.strip() for part in strategies.split(",") if part.strip()]
    if not strategies:
        raise BacktestInputError("no strategy named: give at least one, e.g. vpa,krr")
    known = builtin_strategies()
    resolved: list[StrategySpec] = []
    for item in strategies:
        if isinstance(item, StrategySpec):
            resolved.append(item)
        elif item in known:
            resolved.append(known[item])
        elif ":" in item:
            resolved.append(_imported(item))
        else:
            raise BacktestInputError(
                f"unknown strategy {item!r}: choose from {', '.join(known)} "
                "or name a factory as module.path:function"
            )
    taken = sorted({spec.name for spec in resolved if spec.imported and spec.name in known})
    if taken:  # results (and every ratio to vpa) would be reported as the built-in's
        raise BacktestInputError(
            f"an imported strategy cannot take the built-in name {', '.join(taken)}: "
            "label it otherwise (label=module.path:function)"
        )
    names = [spec.name for spec in resolved]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise BacktestInputError(f"strategy named twice: {', '.join(duplicates)}")
    return resolved
