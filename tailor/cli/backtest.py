"""`tailor backtest`: how much would each strategy have saved on this history, at what risk?

Replays the history (demo fleet, a file, or a shared dataset) through every
named strategy and prints the metrics side by side (rich table with each
strategy's ratio to vpa, or JSON), optionally with per-container metrics and a
self-contained HTML report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from recommender.backtest import (
    BacktestInputError,
    BacktestResult,
    ExecutionSettings,
    ReplaySettings,
    parse_duration,
    prepare_history,
    resolve_strategies,
    run_backtest,
)
from recommender.backtest.frontier import parse_budgets, run_frontier
from recommender.backtest.history import ReplayHistory, WarmUpError
from recommender.backtest.pieces import split_series
from recommender.backtest.registry import (
    StrategySpec,
    with_baseline_settings,
    with_forecast_settings,
)
from recommender.backtest.settings import format_duration
from tailor.cli.backtest_flags import (
    Budgets,
    Dataset,
    Demo,
    Engine,
    EngineChoice,
    Events,
    Format,
    Frontier,
    Input,
    Limit,
    Months,
    Output,
    PerContainer,
    Report,
    Scheduler,
    ShowProgress,
    Split,
    Strategies,
    WarmUp,
    Workers,
)
from tailor.cli.backtest_output import (
    OUTPUT_SUFFIXES,
    BacktestFormat,
    distinct_outputs,
    emit,
    render,
    report_possible,
    write_per_container,
)
from tailor.cli.inputs import known_dataset, load_history
from tailor.cli.options import (
    BaselineSet,
    ForecastSet,
    baseline_settings_option,
    forecast_settings,
    note_unmatched_ooms,
    output_format,
)
from tailor.cli.writing import write_text

MONTH = re.compile(r"\d{4}-\d{1,2}")  # a Bitbrains month folder: 2013-9


def _months(text: str) -> list[str]:
    """The months of `--months`: an empty list made the loader fail with a traceback, a
    repeated month with a misleading 'unsorted' error, and a path left the dataset."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise typer.BadParameter("name at least one month, e.g. 2013-9", param_hint="--months")
    for name in names:
        if not MONTH.fullmatch(name):
            raise typer.BadParameter(
                f"{name!r} is not a month such as 2013-9", param_hint="--months"
            )
        if names.count(name) > 1:
            raise typer.BadParameter(f"{name} is named twice", param_hint="--months")
    return names


def _dataset_options(dataset: str | None, months: str | None, limit: int | None) -> dict[str, Any]:
    if dataset is not None:
        known_dataset(dataset)  # a misspelt name is the news, not that --months does not fit it
    options: dict[str, Any] = {}
    if months is not None:
        if dataset != "bitbrains":
            raise typer.BadParameter("--months goes with --dataset bitbrains")
        options["months"] = _months(months)
    if limit is not None:
        if dataset not in ("azure", "google2011"):
            raise typer.BadParameter("--limit goes with --dataset azure or google2011")
        options["limit"] = limit
    return options


def positive_duration(text: str, option: str) -> int:
    """Seconds in a duration flag such as --split or --level-block, which must be positive."""
    try:
        seconds = parse_duration(text)
    except BacktestInputError as error:
        raise typer.BadParameter(str(error), param_hint=option) from error
    if seconds <= 0:
        raise typer.BadParameter(f"must be a positive duration, got {text!r}", param_hint=option)
    return seconds


def backtest_history(
    demo: bool,
    input: Path | None,
    events: Path | None,
    dataset: str | None,
    months: str | None,
    limit: int | None,
    warm_up: str | None,
    split: str | None = None,
) -> ReplayHistory:
    """The replay history a backtest-like command reads (flags checked, warm-up applied)."""
    # `is None`, not truthiness: an empty --split or --warm-up silently meant the default
    span = None if split is None else positive_duration(split, "--split")
    try:
        # every dataset's series span days (Google 2011's jobs 1 to 10): one day of warm-up
        default = ReplaySettings().warm_up_seconds if span is None else span // 4
        warm_up_seconds = default if warm_up is None else parse_duration(warm_up)
        replay = ReplaySettings(warm_up_seconds=warm_up_seconds)
    except BacktestInputError as error:
        raise typer.BadParameter(str(error), param_hint="--warm-up") from error
    options = _dataset_options(dataset, months, limit)
    usage, event_frame = load_history(demo, input, events, dataset, options)
    if events is not None:
        note_unmatched_ooms(Console(stderr=True), usage, event_frame)
    try:
        if span is not None:
            usage, event_frame = split_series(usage, event_frame, span)
        return prepare_history(usage, event_frame, replay)
    except WarmUpError as error:
        raise _no_window_left(error, warm_up, split) from error
    except BacktestInputError as error:
        raise typer.BadParameter(str(error)) from error


def _no_window_left(error: WarmUpError, warm_up: str | None, split: str | None) -> Exception:
    """Name the flag the warm-up came from: a default one follows --split (or the dataset),
    and telling the user to shorten a --warm-up they never gave misled."""
    if warm_up:
        return typer.BadParameter(str(error), param_hint="--warm-up")
    spans = f"leaves no window to evaluate: {error.longest_text}"
    default = format_duration(error.warm_up_seconds)
    if split:
        return typer.BadParameter(
            f"a piece of {split} warms up for a quarter of it ({default}) by default, which "
            f"{spans}; choose a shorter --split, or a --warm-up",
            param_hint="--split",
        )
    return typer.BadParameter(
        f"the default warm-up of {default} {spans}; choose a shorter one with --warm-up",
        param_hint="--warm-up",
    )


@dataclass(frozen=True)
class BacktestSettings:
    """What `tailor backtest` replays and writes, checked before the history is read."""

    specs: list[StrategySpec]
    execution: ExecutionSettings
    frontier: bool
    budgets: tuple[int, ...]
    fmt: BacktestFormat
    output: Path | None
    report: Path | None
    per_container: Path | None
    progress: bool


def strategy_specs(
    strategies: str, forecast_set: list[str] | None, baseline_set: list[str] | None
) -> list[StrategySpec]:
    """The strategies named, with the settings `--forecast-set` / `--baseline-set` give."""
    settings = forecast_settings(forecast_set)
    baselines = baseline_settings_option(baseline_set)
    try:
        specs = resolve_strategies(strategies)
        if settings is not None:
            specs = with_forecast_settings(specs, settings)
        return with_baseline_settings(specs, baselines) if baselines else specs
    except BacktestInputError as error:
        raise typer.BadParameter(str(error)) from error


def sweep(frontier: bool, budgets: str | None) -> tuple[int, ...]:
    """The change budgets `--budgets` sweeps (with `--frontier` only)."""
    try:
        if budgets is not None and not frontier:
            raise BacktestInputError("--budgets goes with --frontier")
        return () if budgets is None else tuple(parse_budgets(budgets))
    except BacktestInputError as error:
        raise typer.BadParameter(str(error)) from error


def execution_settings(
    engine: EngineChoice, workers: int | None, scheduler: str | None
) -> ExecutionSettings:
    try:
        return ExecutionSettings(engine=engine.value, workers=workers, scheduler=scheduler)
    except BacktestInputError as error:
        raise typer.BadParameter(str(error)) from error


def note_history(err: Console, history: ReplayHistory) -> None:
    """What of the history is left out of the metrics, on stderr."""
    if history.unevaluated:
        err.print(f"note: {history.unevaluated} series shorter than the warm-up are not evaluated")
    if history.events_outside:
        err.print(
            f"note: {history.events_outside} events of the history's containers fall before "
            "its first or after its last sample and are ignored",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def replay(history: ReplayHistory, settings: BacktestSettings, err: Console) -> BacktestResult:
    """Run the backtest (or the frontier sweep) with a progress bar on stderr."""
    with Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("containers"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not settings.progress,
    ) as bar:
        task = bar.add_task("replay", total=history.size)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done * history.size / max(total, 1))

        try:
            if settings.frontier:
                return run_frontier(
                    history, settings.specs, settings.execution, advance, settings.budgets
                )
            return run_backtest(
                history, strategies=settings.specs, execution=settings.execution, progress=advance
            )
        except BacktestInputError as error:
            raise typer.BadParameter(str(error)) from error


def write_outputs(
    history: ReplayHistory,
    result: BacktestResult,
    settings: BacktestSettings,
    dataset: str | None,
    err: Console,
) -> None:
    """The table or JSON, the per-container rows and the report; the report is drawn
    before anything is written."""
    report = settings.report
    page = None if report is None else render(history, result, settings.specs, dataset)
    emit(result, settings.fmt, settings.output)
    if settings.per_container is not None:
        write_per_container(result, settings.per_container)
    if report is not None and page is not None:
        write_text(report, page, "--report")
        err.print(f"report written to {report}")


def backtest_command(
    demo: Demo = False,
    input: Input = None,
    events: Events = None,
    dataset: Dataset = None,
    months: Months = None,
    limit: Limit = None,
    strategies: Strategies = "vpa,krr,autopilot,oracle",
    warm_up: WarmUp = None,
    split: Split = None,
    fmt: Format = None,
    output: Output = None,
    report: Report = None,
    per_container: PerContainer = None,
    engine: Engine = EngineChoice.local,
    scheduler: Scheduler = None,
    workers: Workers = None,
    progress: ShowProgress = True,
    forecast_set: ForecastSet = None,
    baseline_set: BaselineSet = None,
    frontier: Frontier = False,
    budgets: Budgets = None,
) -> None:
    """Replay usage history through recommendation strategies and compare them."""
    chosen = output_format(fmt, BacktestFormat.table, output, OUTPUT_SUFFIXES)
    distinct_outputs({"--output": output, "--report": report, "--per-container": per_container})
    specs = strategy_specs(strategies, forecast_set, baseline_set)
    settings = BacktestSettings(
        specs, execution_settings(engine, workers, scheduler), frontier,
        sweep(frontier, budgets), chosen, output, report, per_container, progress,
    )  # fmt: skip
    if report is not None:
        report_possible()
    history = backtest_history(demo, input, events, dataset, months, limit, warm_up, split)
    err = Console(stderr=True)
    note_history(err, history)
    result = replay(history, settings, err)
    write_outputs(history, result, settings, dataset, err)
