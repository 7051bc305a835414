"""Offline backtests: replay recorded usage through recommendation strategies, closed loop.

    from recommender.backtest import run_backtest
    result = run_backtest(usage, events, "vpa,krr,autopilot,oracle")
    result.to_dict()          # {"containers", "container_days", "strategies": {...}}
    result.per_container      # one row per (strategy, container)

See history.py for how awkward input is treated, engine.py for the replay
loop, metrics.py for the exact metric definitions.
"""

from recommender.backtest.history import ReplayHistory, prepare_history
from recommender.backtest.metrics import METRIC_NAMES
from recommender.backtest.registry import (
    DEFAULT_STRATEGIES,
    StrategySpec,
    builtin_strategies,
    resolve_strategies,
)
from recommender.backtest.result import BacktestResult
from recommender.backtest.runner import run_backtest
from recommender.backtest.settings import (
    BacktestInputError,
    ExecutionSettings,
    ReplaySettings,
    parse_duration,
)

__all__ = [
    "DEFAULT_STRATEGIES",
    "METRIC_NAMES",
    "BacktestInputError",
    "BacktestResult",
    "ExecutionSettings",
    "ReplayHistory",
    "ReplaySettings",
    "StrategySpec",
    "builtin_strategies",
    "parse_duration",
    "prepare_history",
    "resolve_strategies",
    "run_backtest",
]
