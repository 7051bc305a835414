"""Frontiers: every strategy swept over its risk knobs, and read off at `vpa`'s risk.

A single operating point hides the trade-off a user chooses: each strategy buys less
slack with more shortfall (CPU) or more OOM kills (memory). `frontier_specs` makes one
variant of a strategy per point of its documented grid (`GRIDS`, the product of its
knobs' values, times the change budgets asked for where the strategy has a budget);
they replay as ordinary strategies, so the points run in parallel as any backtest does.

`read_off` answers the comparison users need: the least slack a strategy reaches at a
risk no higher than `vpa`'s default point's, linear between neighbouring points of its
efficient frontier (mixing two settings over a fleet's containers gets any point on
that segment). A risk below every point the grid reached reads as NaN.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from recommender.backtest import registry
from recommender.backtest.history import ReplayHistory
from recommender.backtest.registry import StrategySpec
from recommender.backtest.result import BASELINE, BacktestResult
from recommender.backtest.runner import ProgressCallback, run_backtest
from recommender.backtest.settings import BacktestInputError, ExecutionSettings
from recommender.overrides import SettingsError, settings_with

#: Unlimited change budget: a change every 5-minute window is the most a replay makes.
UNLIMITED_CHANGES = 288

#: The frontier's comparison: (risk metric, slack metric) per resource.
READINGS = (
    ("cpu_shortfall_rate", "cpu_relative_slack"),
    ("oom_per_container_day", "memory_relative_slack"),
)


@dataclass(frozen=True)
class Knobs:
    """A strategy's grid: settings (dotted NAME of its settings) and their values; a
    tuple of names moves several settings together (one risk knob). `budget`: the
    setting that caps changes per day, where the strategy has one."""

    axes: Mapping[str | tuple[str, ...], tuple[float, ...]]
    budget: str | None = None


GRIDS: Mapping[str, Knobs] = {
    "vpa": Knobs(
        {
            "model.target_percentile": (0.8, 0.9, 0.95, 0.99),
            "model.safety_margin": (0.0, 0.15, 0.3),
        }
    ),
    "krr": Knobs(
        {"cpu_percentile": (0.8, 0.9, 0.95, 0.99), "memory_buffer": (0.05, 0.15, 0.3)},
        budget="policy.max_changes_per_day",
    ),
    "autopilot": Knobs(
        {
            "cpu_percentile": (0.8, 0.9, 0.95, 0.99),
            ("cpu_margin", "memory_margin"): (0.0, 0.15, 0.3),
        },
        budget="policy.max_changes_per_day",
    ),
    # decrease_threshold 0.9 (cuts only by 90 %: the request does not follow a daily
    # cycle down) is the safe end: on smooth cycles vpa_parity_factor stops at its floor
    # (target_cpu_shortfall) far above vpa's own shortfall (docs/results/frontiers.md)
    "forecast": Knobs(
        {
            "vpa_parity_factor": (0.3, 0.6, 1.0),
            "memory_margin": (0.1, 0.2, 0.3),
            "hysteresis.decrease_threshold": (0.15, 0.9),
        },
        budget="max_changes_per_day",
    ),
}
GRIDS = {**GRIDS, "forecast-perfect": GRIDS["forecast"]}


@dataclass(frozen=True)
class FrontierVariant:
    """One point of a strategy's grid: the strategy it belongs to, its knob values, and
    the spec that replays it (the strategy's own spec at the default point)."""

    strategy: str
    setting: dict[str, Any]
    spec: StrategySpec


def _unwrapped(spec: StrategySpec) -> tuple[Any, Any]:
    """The built-in factory behind `spec` and the settings it was bound to (None: the
    strategy's defaults)."""
    factory = spec.factory
    if isinstance(factory, functools.partial):
        return factory.func, factory.keywords.get("settings")
    return factory, None


SETTINGS_OF: dict[Callable[..., Any], Callable[[], Any]] = {
    registry.make_vpa: registry.vpa_settings,
    registry.make_krr: registry.KrrSettings,
    registry.make_autopilot: registry.AutopilotSettings,
    registry.make_forecast: registry.forecast_settings,
    registry.make_perfect_forecast: registry.forecast_settings,
}


Point = dict[str | tuple[str, ...], Any]  # knob name(s) -> value


def _points(knobs: Knobs, budgets: Sequence[int]) -> list[Point]:
    axes: dict[str | tuple[str, ...], tuple[Any, ...]] = dict(knobs.axes)
    if knobs.budget is not None and budgets:
        axes[knobs.budget] = tuple(budgets)
    names = list(axes)
    combos = itertools.product(*axes.values())
    return [dict(zip(names, values, strict=True)) for values in combos]


def _pairs(point: Mapping[str | tuple[str, ...], Any]) -> list[str]:
    pairs = []
    for names, value in point.items():
        for name in (names,) if isinstance(names, str) else names:
            pairs.append(f"{name}={value}")
    return pairs


def _label(point: Mapping[str | tuple[str, ...], Any]) -> dict[str, Any]:
    return {(names if isinstance(names, str) else "+".join(names)): v for names, v in point.items()}


def frontier_variants(spec: StrategySpec, budgets: Sequence[int] = ()) -> list[FrontierVariant]:
    """Every grid point of `spec` (its default first, as `spec` itself); a strategy
    without a grid (the oracles, an imported one) is its default point alone. A point
    whose settings equal the default's is the default point, not replayed twice."""
    factory, bound = _unwrapped(spec)
    default = FrontierVariant(spec.name, {"default": True}, spec)
    knobs = GRIDS.get(spec.name)
    if knobs is None or spec.imported or factory not in SETTINGS_OF:
        return [default]
    base = bound if bound is not None else SETTINGS_OF[factory]()
    variants = [default]
    for index, point in enumerate(_points(knobs, budgets)):
        try:
            settings = settings_with(_pairs(point), base, spec.name)
        except SettingsError as error:
            raise BacktestInputError(f"frontier of {spec.name}: {error}") from error
        if settings == base:
            variants[0] = FrontierVariant(spec.name, {**_label(point), "default": True}, spec)
            continue
        variant = StrategySpec(
            f"{spec.name}~{index}",
            functools.partial(factory, settings=settings),
            spec.description,
            configured=True,
            relative_cost=spec.relative_cost,
        )
        variants.append(FrontierVariant(spec.name, _label(point), variant))
    return variants


def efficient(points: Sequence[Mapping[str, Any]], risk: str, slack: str) -> np.ndarray:
    """(k, 2) risk and slack of the points no other point beats on both, by risk."""
    pairs = np.array(
        [(point[risk], point[slack]) for point in points if _finite(point, risk, slack)],
        dtype=np.float64,
    ).reshape(-1, 2)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    kept: list[np.ndarray] = []
    for pair in pairs[order]:
        if not kept or pair[1] < kept[-1][1]:
            kept.append(pair)
    return np.array(kept, dtype=np.float64).reshape(-1, 2)


def _finite(point: Mapping[str, Any], *names: str) -> bool:
    values = [point.get(name) for name in names]
    return all(value is not None and np.isfinite(value) for value in values)


def read_off(points: Sequence[Mapping[str, Any]], risk: str, slack: str, at: float) -> float:
    """The least `slack` reached at a `risk` of at most `at`, linear between neighbouring
    efficient points; NaN when every point takes more risk (or none has both figures)."""
    frontier = efficient(points, risk, slack)
    if not np.isfinite(at) or frontier.size == 0 or at < frontier[0, 0]:
        return float("nan")
    if at >= frontier[-1, 0]:
        return float(frontier[-1, 1])
    return float(np.interp(at, frontier[:, 0], frontier[:, 1]))


def readings(
    frontiers: Mapping[str, Sequence[Mapping[str, Any]]], baseline: Mapping[str, float]
) -> dict[str, dict[str, float]]:
    """Per strategy: the baseline's risks (its default point's) and the slack read off
    the strategy's frontier at each."""
    out: dict[str, dict[str, float]] = {}
    for name, points in frontiers.items():
        reading: dict[str, float] = {}
        for risk, slack in READINGS:
            at = baseline.get(risk, float("nan"))
            reading[risk] = at
            reading[slack] = read_off(points, risk, slack, at)
        out[name] = reading
    return out


def budget_of(setting: Mapping[str, Any]) -> int | None:
    """The change budget a grid point was replayed at (None: the strategy's own, as at a
    default point outside the swept budgets, or a strategy without a budget)."""
    for knobs in GRIDS.values():
        if knobs.budget is not None and knobs.budget in setting:
            return int(setting[knobs.budget])
    return None


def readings_per_budget(
    frontiers: Mapping[str, Sequence[Mapping[str, Any]]], baseline: Mapping[str, float]
) -> dict[str, dict[int, dict[str, float]]]:
    """Per strategy with swept budgets, per budget: `readings` of the frontier made of
    that budget's points alone. Read over all budgets at once, a frontier would mix
    them, and the reading would be the largest budget's whatever it costs in changes."""
    grouped: dict[str, dict[int, list[Mapping[str, Any]]]] = {}
    for name, points in frontiers.items():
        for point in points:
            budget = budget_of(point["setting"])
            if budget is not None:
                grouped.setdefault(name, {}).setdefault(budget, []).append(point)
    return {
        name: {budget: readings({name: points}, baseline)[name] for budget, points in by.items()}
        for name, by in grouped.items()
    }


def parse_budgets(text: str) -> tuple[int, ...]:
    """`--budgets 6,12,24,unlimited`: changes per day for the strategies that have a cap."""
    budgets = []
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        if part.lower() in ("unlimited", "inf", "none"):
            budgets.append(UNLIMITED_CHANGES)
            continue
        try:
            value = int(part)
        except ValueError:
            raise BacktestInputError(
                f"budget {part!r}: expected changes per day (an integer) or 'unlimited'"
            ) from None
        if not 1 <= value <= UNLIMITED_CHANGES:
            raise BacktestInputError(f"budget {value}: must be in [1, {UNLIMITED_CHANGES}]")
        budgets.append(value)
    if not budgets:
        raise BacktestInputError("--budgets names no budget")
    if len(set(budgets)) < len(budgets):
        raise BacktestInputError("--budgets names a budget twice")
    return tuple(budgets)


def run_frontier(
    history: ReplayHistory,
    specs: Sequence[StrategySpec],
    execution: ExecutionSettings | None = None,
    progress: ProgressCallback | None = None,
    budgets: Sequence[int] = (),
) -> BacktestResult:
    """`run_backtest` of `specs` with each strategy's grid replayed beside its default
    point (all points are tasks of one run, spread over its workers). The result is the
    default points' as without a frontier, plus every strategy's `frontier` and the
    slack read off it at `vpa`'s default risks (`readings`, when `vpa` is run; with
    `budgets`, also per budget: `budget_readings`)."""
    variants = [variant for spec in specs for variant in frontier_variants(spec, budgets)]
    everything = run_backtest(
        history,
        strategies=[variant.spec for variant in variants],
        execution=execution,
        progress=progress,
    )
    frontiers: dict[str, list[dict[str, Any]]] = {spec.name: [] for spec in specs}
    for variant in variants:
        point: dict[str, Any] = dict(everything.summary[variant.spec.name])
        point["setting"] = variant.setting
        frontiers[variant.strategy].append(point)
    names = [spec.name for spec in specs]
    baseline = everything.summary.get(BASELINE)
    if baseline is None:
        return replace(everything.only(names), frontiers=frontiers)
    return replace(
        everything.only(names),
        frontiers=frontiers,
        readings=readings(frontiers, baseline),
        budget_readings=readings_per_budget(frontiers, baseline) if budgets else {},
    )
