"""`tailor recommend`: what to change per container, and what it saves.

Requests per (namespace, workload, container) from history, as the VPA would write
them (or as the forecaster plans them), beside the requests in force now, with the
change, its severity and the savings per namespace (`recommender.advice`,
`recommender.savings`: the library path notebooks share).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console

from recommender.forecast.settings import ForecastSettings
from recommender.savings import DEFAULT_CPU_PRICE, DEFAULT_MEMORY_PRICE, Prices
from recommender.vpa.settings import VpaSettings
from tailor.cli import options
from tailor.cli.cluster_history import (
    AllNamespaces,
    Context,
    Kubeconfig,
    Selector,
    cluster_scope,
    read_chosen,
    source_choice,
)
from tailor.cli.output import OutputFormat, recommendation_view, render
from tailor.cli.progress import progress_bar
from tailor.cli.tables import print_table
from tailor.cli.writing import write_text

STRATEGIES = ("vpa", "forecast")
SUFFIXES = {
    ".txt": OutputFormat.table,
    ".json": OutputFormat.json,
    ".yaml": OutputFormat.yaml,
    ".yml": OutputFormat.yaml,
    ".csv": OutputFormat.csv,
}

Strategy = Annotated[str, typer.Option(help="Recommendation model: vpa or forecast.")]
Format = Annotated[OutputFormat | None, typer.Option("--format", help=options.FORMAT_HELP)]
Wide = Annotated[bool, typer.Option("--wide", help="Every bound and change in its own column.")]
Explain = Annotated[
    bool, typer.Option("--explain", help="Each recommendation's explanation under its figures.")
]
Summary = Annotated[
    bool | None,
    typer.Option(
        "--summary/--no-summary",
        help="Totals per namespace and overall, now and recommended (table: a footer; "
        "JSON / YAML: a second document). On by default for tables.",
    ),
]
CpuPrice = Annotated[
    float, typer.Option(min=0.0, help="Price of a core-hour, for the savings (your currency).")
]
MemoryPrice = Annotated[
    float, typer.Option(min=0.0, help="Price of a GiB-hour, for the savings (your currency).")
]


@dataclass(frozen=True)
class RecommendSettings:
    """What `tailor recommend` was asked for, checked."""

    model: str
    vpa: VpaSettings | None
    forecast: ForecastSettings | None
    count_throttling: bool
    fmt: OutputFormat
    output: Path | None
    wide: bool
    explain: bool
    summary: bool
    prices: Prices


def recommend_settings(
    strategy: str,
    forecast_set: list[str] | None,
    changes_per_day: int | None,
    vpa_set: list[str] | None,
    ignore_throttling: bool,
    fmt: OutputFormat,
    output: Path | None,
    view: tuple[bool, bool, bool | None],
    prices: tuple[float, float],
) -> RecommendSettings:
    """The flags as one value; a model's settings for the other model are refused."""
    if strategy not in STRATEGIES:
        raise typer.BadParameter(
            f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}",
            param_hint="--strategy",
        )
    forecast = options.forecast_settings(forecast_set)
    if forecast is not None and strategy != "forecast":
        raise typer.BadParameter("needs --strategy forecast", param_hint="--forecast-set")
    if changes_per_day is not None and strategy != "forecast":  # the VPA holds one request
        raise typer.BadParameter("needs --strategy forecast", param_hint="--changes-per-day")
    forecast = options.with_budget(forecast, changes_per_day)
    vpa = options.vpa_settings(vpa_set)
    if vpa is not None and strategy != "vpa":
        raise typer.BadParameter("needs --strategy vpa", param_hint="--vpa-set")
    wide, explain, summary = view
    if summary is None:  # a footer under a table; JSON stays one list unless asked
        summary = fmt is OutputFormat.table
    return RecommendSettings(
        strategy,
        vpa,
        forecast,
        not ignore_throttling,
        fmt,
        output,
        wide,
        explain,
        summary,
        Prices(*prices),
    )


def recommend_command(
    kubeconfig: Kubeconfig = None,
    context: Context = None,
    all_namespaces: AllNamespaces = False,
    selector: Selector = None,
    demo: options.Demo = False,
    input: options.Input = None,
    events: options.Events = None,
    prometheus: options.Prometheus = None,
    history: options.History = options.HISTORY_DEFAULT,
    step: options.Step = options.STEP_DEFAULT,
    chunk: options.Chunk = None,
    namespace: options.Namespace = None,
    match: options.Match = None,
    token_file: options.TokenFile = None,
    insecure: options.Insecure = False,
    prometheus_set: options.PrometheusSet = None,
    prometheus_username: options.PrometheusUsername = None,
    prometheus_password_file: options.PrometheusPasswordFile = None,
    strategy: Strategy = "vpa",
    fmt: Format = None,
    output: options.Output = None,
    wide: Wide = False,
    explain: Explain = False,
    summary: Summary = None,
    cpu_price: CpuPrice = DEFAULT_CPU_PRICE,
    memory_price: MemoryPrice = DEFAULT_MEMORY_PRICE,
    forecast_set: options.ForecastSet = None,
    changes_per_day: options.ChangesPerDay = None,
    vpa_set: options.VpaSet = None,
    ignore_throttling: options.IgnoreThrottling = False,
) -> None:
    """Recommend cpu and memory requests per (namespace, workload, container)."""
    chosen = options.output_format(fmt, OutputFormat.table, output, SUFFIXES)
    settings = recommend_settings(
        strategy, forecast_set, changes_per_day, vpa_set, ignore_throttling, chosen, output,
        (wide, explain, summary), (cpu_price, memory_price),
    )  # fmt: skip
    scope = cluster_scope(kubeconfig, context, namespace, all_namespaces, selector)
    choice, url = source_choice(scope, demo, input, events, prometheus)
    source = options.prometheus_options(
        url, history, step, chunk, namespace, match, token_file, insecure, prometheus_set,
        prometheus_username, prometheus_password_file,
    )  # fmt: skip
    err_console = Console(stderr=True)
    usage, event_frame, current = read_chosen(choice, source, err_console)
    emit(advised(usage, event_frame, settings, source, err_console, current), settings)


def advised(
    usage: pd.DataFrame,
    events: pd.DataFrame,
    settings: RecommendSettings,
    source: options.PrometheusOptions | None,
    console: Console,
    current: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """`recommender.advice.advise` with a progress bar and the flags' errors."""
    from recommender.advice import advise  # the models: not for --help

    with progress_bar(console) as progress, options.forecast_errors(settings.forecast, source):
        task = progress.add_task("ingesting history", total=len(usage))
        return advise(
            usage,
            events,
            settings.model,
            vpa=settings.vpa,
            forecast=settings.forecast,
            step=options.sample_step(source),
            current=current,
            checked=True,  # read_history's sources validate what they return
            count_throttling=settings.count_throttling,
            progress=lambda done, _total: progress.update(task, completed=done),
        )


def emit(rows: pd.DataFrame, settings: RecommendSettings) -> None:
    """Print a rich table on a terminal, else write the requested text format."""
    from recommender.savings import savings_summary

    summary = savings_summary(rows, settings.prices) if settings.summary else None
    if settings.output is None and settings.fmt is OutputFormat.table:
        print_table(recommendation_view(rows, summary, settings.wide, settings.explain))
        return
    if settings.fmt is OutputFormat.table:
        from tailor.cli.tables import text_of

        text = text_of(recommendation_view(rows, summary, settings.wide, settings.explain))
    else:
        text = render(rows, settings.fmt, summary)
    if settings.output is None:
        sys.stdout.write(text)
    else:
        write_text(settings.output, text)
