"""`tailor hindsight`: how low could relative slack go at all on this history?

Prints the certified lower bound of `recommender.backtest.hindsight` for the same
history `tailor backtest` replays (same flags, same warm-up and container-days):
no strategy, even one that knows the future, gets below it with at most
`--changes-per-day` changes per container-day (p99) and the given shortfall or
OOM budget.
"""

from __future__ import annotations

import math
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

import numpy as np
import typer

from recommender.backtest.block_optimum import block_optimum
from recommender.backtest.hindsight import (
    HindsightInputError,
    budget_from_rate,
    check_budget_rate,
    check_limits,
    container_days,
    slack_lower_bound,
)
from recommender.backtest.history import ReplayHistory
from recommender.backtest.level_reference import level_reference, peak_reference
from recommender.backtest.peak_floor import forgetting_window, trailing_peak_floor
from recommender.backtest.settings import format_duration
from tailor.cli.backtest import backtest_history, positive_duration
from tailor.cli.backtest_flags import Dataset, Demo, Events, Input, Limit, Months, Split, WarmUp
from tailor.durations import DurationError, whole_windows


class Resource(StrEnum):
    cpu = "cpu"
    memory = "memory"


ResourceFlag = Annotated[Resource, typer.Option("--resource", help="cpu or memory.")]
BudgetRate = Annotated[
    float,
    typer.Option(
        "--budget-rate",
        help="Shortfalls allowed per evaluated window (cpu) or OOM kills per "
        "container-day (memory), e.g. the vpa strategy's measured rate.",
    ),
]
ChangesPerDay = Annotated[
    int,
    typer.Option("--changes-per-day", help="Change cap per container-day (0: flat each day)."),
]
ExemptFraction = Annotated[
    float,
    typer.Option("--exempt-fraction", help="Days exempt from the cap, 0 to 0.5 (p99: 0.01)."),
]
LevelBlock = Annotated[
    str | None,
    typer.Option(
        "--level-block",
        help="Also print the clairvoyant references for flat requests per block of "
        "this length (e.g. 4h): from each block's true mean and spread, and the best "
        "flat request knowing every window of the block (cpu), or at each block's "
        "true peak (memory).",
    ),
]
AtLeastMean = Annotated[
    bool,
    typer.Option(
        "--at-least-mean",
        help="The --level-block cpu references never request less than a block's own "
        "mean usage: no container is starved to save slack.",
    ),
]
PeakWindow = Annotated[
    str | None,
    typer.Option(
        "--peak-window",
        help="Memory only: also print the least slack of any limit never under the peak "
        "of this much history before each window (e.g. 24h), OOM kills not counted.",
    ),
]
SlackGoal = Annotated[
    float | None,
    typer.Option(
        "--slack-goal",
        help="Memory only: also print how soon a limit must forget a peak for its least "
        "slack to reach this relative slack (0 to 1).",
    ),
]


@dataclass(frozen=True)
class HindsightSettings:
    """What `tailor hindsight` bounds, checked before the history is read."""

    resource: Resource
    budget_rate: float
    changes_per_day: int
    exempt_fraction: float
    block: int | None  # seconds of a --level-block
    at_least_mean: bool
    memory_window: int | None  # seconds of a --peak-window
    slack_goal: float | None


def hindsight_settings(
    resource: Resource,
    limits: tuple[float, int, float],
    level_block: str | None,
    at_least_mean: bool,
    peak_window: str | None,
    slack_goal: float | None,
) -> HindsightSettings:
    """The flags checked into one value (exit 2 naming the flag at fault)."""
    budget_rate, changes_per_day, exempt_fraction = limits
    block = None if level_block is None else positive_duration(level_block, "--level-block")
    memory_window = _peak_window_seconds(resource, peak_window, slack_goal)
    with _flag_errors():
        check_budget_rate(resource.value, budget_rate)
        check_limits(changes_per_day, exempt_fraction)
    return HindsightSettings(
        resource,
        budget_rate,
        changes_per_day,
        exempt_fraction,
        block,
        at_least_mean,
        memory_window,
        slack_goal,
    )


def hindsight_command(
    demo: Demo = False,
    input: Input = None,
    events: Events = None,
    dataset: Dataset = None,
    months: Months = None,
    limit: Limit = None,
    warm_up: WarmUp = None,
    split: Split = None,
    resource: ResourceFlag = Resource.cpu,
    budget_rate: BudgetRate = 0.0,
    changes_per_day: ChangesPerDay = 6,
    exempt_fraction: ExemptFraction = 0.01,
    level_block: LevelBlock = None,
    at_least_mean: AtLeastMean = False,
    peak_window: PeakWindow = None,
    slack_goal: SlackGoal = None,
) -> None:
    """Certified lower bound on the relative slack any strategy can reach on this history."""
    started = time.perf_counter()
    settings = hindsight_settings(
        resource,
        (budget_rate, changes_per_day, exempt_fraction),
        level_block,
        at_least_mean,
        peak_window,
        slack_goal,
    )
    history = backtest_history(demo, input, events, dataset, months, limit, warm_up, split)
    run_hindsight(history, settings, started)


def run_hindsight(history: ReplayHistory, settings: HindsightSettings, started: float) -> None:
    """Bound the history's slack and print the bound and the references asked for."""
    resource = settings.resource
    if resource is Resource.memory and np.any(history.memory_limit_ratio != 1.0):
        raise typer.BadParameter(
            "the memory bound assumes limit = request (a limit/request ratio of 1)",
            param_hint="--resource",
        )
    try:
        block = settings.block
        windows = None if block is None else whole_windows(block, history.usage.step, "a block")
    except DurationError as error:
        raise typer.BadParameter(str(error), param_hint="--level-block") from error
    days = container_days(history, resource.value)
    if days.windows == 0:
        raise typer.BadParameter(f"no {resource.value} usage to bound", param_hint="--resource")
    loaded = time.perf_counter()
    with _flag_errors():
        budget = budget_from_rate(days, resource.value, settings.budget_rate)
        result = slack_lower_bound(days, budget, settings.changes_per_day, settings.exempt_fraction)
    typer.echo(f"{resource.value}_relative_slack > {_bound_text(result.bound)} (certified)")
    typer.echo(meaning(settings, result.bound))
    details = (
        f"details: lambda={result.multiplier:.4g}, budget={result.budget:g} of "
        f"{days.windows} windows, {days.container_days:.1f} container-days, "
        f"counted days={result.counted_days}, exempt={result.exempt_days}, "
        f"free={result.free_days}, evaluations={result.evaluations}, "
        f"load {loaded - started:.1f}s, bound {time.perf_counter() - loaded:.1f}s"
    )
    typer.echo(textwrap.fill(details, width=80, subsequent_indent="  "))
    if windows is not None:
        _print_reference(history, resource, windows, settings.budget_rate, settings.at_least_mean)
    _print_peak_floor(history, settings.memory_window, settings.slack_goal)


def meaning(settings: HindsightSettings, bound: float) -> str:
    """The bound in words for the user, wrapped to 80 columns: what no strategy can beat."""
    floor = math.floor(bound * 1000) / 10  # rounded down, as the bound is
    if settings.resource is Resource.cpu:
        what, risk = "CPU", "no window short of CPU"
        if settings.budget_rate:
            risk = f"at most {settings.budget_rate:.2%} of windows short of CPU"
    else:
        what, risk = "memory", "no OOM kill"
        if settings.budget_rate:
            risk = f"at most {settings.budget_rate:g} OOM kills per container-day"
    text = (
        f"What it means: on this history, no strategy, not even one that knows the future, "
        f"leaves less than {floor:.1f}% of the {what} it requests unused while it has {risk} "
        f"and makes at most {settings.changes_per_day} request changes per container-day "
        f"({settings.exempt_fraction:.0%} of the days may have more). The "
        f"{what.lower()}_relative_slack `tailor backtest` reports for a strategy can come "
        "down to this figure and no further: the gap is what a better strategy could save."
    )
    return textwrap.fill(text, width=80, break_long_words=False, break_on_hyphens=False)


def _peak_window_seconds(
    resource: Resource, peak_window: str | None, slack_goal: float | None
) -> int | None:
    """--peak-window and --slack-goal checked before the history is read."""
    for flag, value in (("--peak-window", peak_window), ("--slack-goal", slack_goal)):
        if value is not None and resource is not Resource.memory:
            raise typer.BadParameter("only for --resource memory", param_hint=flag)
    if slack_goal is not None and not 0.0 <= slack_goal <= 1.0:
        raise typer.BadParameter(f"{slack_goal} is not within 0 to 1", param_hint="--slack-goal")
    return None if peak_window is None else positive_duration(peak_window, "--peak-window")


def _print_peak_floor(
    history: ReplayHistory, seconds: int | None, slack_goal: float | None
) -> None:
    """The trailing-peak floor of --peak-window and the forgetting time of --slack-goal."""
    memory, start, step = history.usage.memory, history.evaluation_start, history.usage.step
    if seconds is not None:
        try:
            window = whole_windows(seconds, step, "a peak window")
        except DurationError as error:
            raise typer.BadParameter(str(error), param_hint="--peak-window") from error
        floor = trailing_peak_floor(memory, start, window)
        typer.echo(
            f"memory_relative_slack > {_bound_text(floor.relative_slack)} (certified, OOM kills "
            f"not counted) for any limit never under the peak of the last "
            f"{format_duration(window * step)}"
        )
    if slack_goal is not None:
        longest = forgetting_window(memory, start, slack_goal)
        if longest is None:
            typer.echo(
                f"memory_relative_slack <= {slack_goal:g} is not ruled out even for a limit "
                "that never forgets a peak of this history"
            )
            return
        typer.echo(
            f"memory_relative_slack <= {slack_goal:g} needs a limit that forgets a peak within "
            f"{format_duration(longest * step)} (any longer memory leaves more, OOM kills "
            "not counted)"
        )


@contextmanager
def _flag_errors() -> Iterator[None]:
    """The library's checks of the limits (one place), as errors naming the flag."""
    try:
        yield
    except HindsightInputError as error:
        flag = "--budget-rate" if error.setting == "budget" else f"--{error.setting}"
        raise typer.BadParameter(str(error), param_hint=flag.replace("_", "-")) from error


def _bound_text(bound: float) -> str:
    """A certified bound printed rounded down, so that the printed figure is still one."""
    return f"{math.floor(bound * 1e4) / 1e4:.4f}"


def _print_reference(
    history: ReplayHistory,
    resource: Resource,
    windows: int,
    budget_rate: float,
    at_least_mean: bool,
) -> None:
    """The clairvoyant reference of --level-block: block levels (cpu) or block peaks (memory)."""
    blocks = f"blocks of {windows * history.usage.step // 60} min"
    floor = ", never below the block's mean" if at_least_mean else ""
    start = history.evaluation_start
    rate = min(budget_rate, 1.0)
    if resource is Resource.cpu:
        level = level_reference(history.usage.cpu, start, windows, rate, at_least_mean)
        typer.echo(
            f"level-clairvoyant cpu_relative_slack = {level.relative_slack:.4f} at shortfall "
            f"{level.shortfall_rate:.4f} ({blocks} sized on their own mean and spread{floor}; "
            "not a bound on mid-block resizes)"
        )
        best = block_optimum(history.usage.cpu, start, windows, rate, at_least_mean)
        typer.echo(
            f"best flat blocks: cpu_relative_slack > {_bound_text(best.bound)} "
            f"(certified; reached: {best.relative_slack:.4f} at shortfall "
            f"{best.shortfall_rate:.4f}; {blocks}, each at the request that is best for the "
            f"fleet knowing every window of the block{floor}: a floor for any strategy "
            "whose request is flat on this block grid)"
        )
        return
    peak = peak_reference(history.usage.memory, start, windows)
    typer.echo(
        f"peak-clairvoyant memory_relative_slack = {peak.relative_slack:.4f} with no OOM "
        f"({blocks} limited at their own true peak; not a bound on mid-block resizes)"
    )
