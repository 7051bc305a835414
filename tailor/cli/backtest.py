"""`tailor backtest`: how much would each strategy have saved on this history, at what risk?

Replays the history (demo fleet, a file, or a shared dataset) through every
named strategy and prints the metrics side by side (rich table with each
strategy's ratio to vpa, or JSON), optionally with per-container metrics and a
self-contained HTML report.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from recommender.backtest import (
    BacktestInputError,
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
from recommender.backtest.registry import with_baseline_settings, with_forecast_settings
from recommender.backtest.settings import format_duration
from tailor.cli.backtest_output import (
    OUTPUT_SUFFIXES,
    BacktestFormat,
    distinct_outputs,
    emit,
    per_container_path,
    render,
    report_path,
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
    output_path,
    writable_path,
)
from tailor.cli.writing import write_text

Demo = Annotated[bool, typer.Option("--demo", help="Replay the built-in demo fleet.")]
Input = Annotated[
    Path | None, typer.Option("--input", help="Usage history file (canonical format).")
]
Events = Annotated[
    Path | None, typer.Option("--events", help="OOM / eviction events file (with --input).")
]
Dataset = Annotated[
    str | None, typer.Option("--dataset", help="Shared trace: bitbrains, azure or google2011.")
]
Months = Annotated[
    str | None, typer.Option("--months", help="Bitbrains months, e.g. 2013-9 or 2013-8,2013-9.")
]
Limit = Annotated[
    int | None, typer.Option("--limit", min=1, help="Azure / Google 2011: first N series.")
]
WarmUp = Annotated[
    str | None,
    typer.Option(
        "--warm-up",
        help="Per-container warm-up left out of the metrics, e.g. 1d, 6h (default 1d).",
    ),
]

Split = Annotated[
    str | None,
    typer.Option(
        "--split",
        help="Cut every series into pieces of this length (e.g. 1d), each replayed as a new "
        "container, all starting together: cold starts from a long trace. The warm-up "
        "defaults to a quarter of a piece.",
    ),
]


class EngineChoice(StrEnum):
    local = "local"
    dask = "dask"


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


def backtest_command(
    demo: Demo = False,
    input: Input = None,
    events: Events = None,
    dataset: Dataset = None,
    months: Months = None,
    limit: Limit = None,
    strategies: Annotated[
        str, typer.Option("--strategies", help="Comma-separated strategy names.")
    ] = "vpa,krr,autopilot,oracle",
    warm_up: WarmUp = None,
    split: Split = None,
    fmt: Annotated[
        BacktestFormat | None,
        typer.Option("--format", help="table or json (default: the --output suffix's, else table)"),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            help="Write the table (.txt) / JSON (.json) to this file.",
            parser=output_path,
            callback=writable_path,
            metavar="FILE",
        ),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Write a self-contained HTML report here (.html).",
            parser=output_path,
            callback=report_path,
            metavar="FILE",
        ),
    ] = None,
    per_container: Annotated[
        Path | None,
        typer.Option(
            "--per-container",
            help="Per-container metrics (.csv, .parquet or .json).",
            parser=output_path,
            callback=per_container_path,
            metavar="FILE",
        ),
    ] = None,
    engine: Annotated[
        EngineChoice, typer.Option("--engine", help="local processes or a dask cluster.")
    ] = EngineChoice.local,
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="Dask scheduler address (default: a LocalCluster)."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Parallel workers (default: cores).")
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")
    ] = True,
    forecast_set: ForecastSet = None,
    baseline_set: BaselineSet = None,
    frontier: Annotated[
        bool,
        typer.Option(
            "--frontier",
            help="Also sweep each strategy's risk knobs over its grid (docs/reference/"
            "frontier.md) and read its slack off the frontier at vpa's default risks.",
        ),
    ] = False,
    budgets: Annotated[
        str | None,
        typer.Option(
            "--budgets",
            help="With --frontier: changes per day to sweep for strategies with a change "
            "budget, e.g. 6,12,24,unlimited (default: each strategy's own).",
        ),
    ] = None,
) -> None:
    """Replay usage history through recommendation strategies and compare them."""
    chosen = output_format(fmt, BacktestFormat.table, output, OUTPUT_SUFFIXES)
    distinct_outputs({"--output": output, "--report": report, "--per-container": per_container})
    settings = forecast_settings(forecast_set)
    baselines = baseline_settings_option(baseline_set)
    try:
        specs = resolve_strategies(strategies)
        if settings is not None:
            specs = with_forecast_settings(specs, settings)
        if baselines:
            specs = with_baseline_settings(specs, baselines)
        execution = ExecutionSettings(
            engine=engine.value,
            workers=workers,
            scheduler=scheduler,
        )
        if budgets is not None and not frontier:
            raise BacktestInputError("--budgets goes with --frontier")
        swept = () if budgets is None else parse_budgets(budgets)
    except BacktestInputError as error:
        raise typer.BadParameter(str(error)) from error
    if report is not None:
        report_possible()
    history = backtest_history(demo, input, events, dataset, months, limit, warm_up, split)
    err = Console(stderr=True)
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
    with Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("containers"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not progress,
    ) as bar:
        task = bar.add_task("replay", total=history.size)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done * history.size / max(total, 1))

        try:
            if frontier:
                result = run_frontier(history, specs, execution, advance, swept)
            else:
                result = run_backtest(
                    history, strategies=specs, execution=execution, progress=advance
                )
        except BacktestInputError as error:
            raise typer.BadParameter(str(error)) from error
    page = None if report is None else render(history, result, specs, dataset)
    emit(result, chosen, output)  # nothing is written before the report is drawn
    if per_container is not None:
        write_per_container(result, per_container)
    if report is not None and page is not None:
        write_text(report, page, "--report")
        err.print(f"report written to {report}")
