"""`tailor recommend`: requests per container from history, as the VPA would write them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console

from recommender.recommend import recommend_vpa
from tailor.cli import options
from tailor.cli.output import TABLE_TITLE, OutputFormat, build_table, render
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


def recommend_command(
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
    strategy: Annotated[str, typer.Option(help="Recommendation model: vpa or forecast.")] = "vpa",
    fmt: Annotated[OutputFormat | None, typer.Option("--format", help=options.FORMAT_HELP)] = None,
    output: options.Output = None,
    forecast_set: options.ForecastSet = None,
    vpa_set: options.VpaSet = None,
    ignore_throttling: options.IgnoreThrottling = False,
) -> None:
    """Recommend cpu and memory requests per (namespace, workload, container)."""
    chosen = options.output_format(fmt, OutputFormat.table, output, SUFFIXES)
    if strategy not in STRATEGIES:
        raise typer.BadParameter(
            f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}",
            param_hint="--strategy",
        )
    settings = options.forecast_settings(forecast_set)
    if settings is not None and strategy != "forecast":
        raise typer.BadParameter("needs --strategy forecast", param_hint="--forecast-set")
    model = options.vpa_settings(vpa_set)
    if model is not None and strategy != "vpa":
        raise typer.BadParameter("needs --strategy vpa", param_hint="--vpa-set")
    err_console = Console(stderr=True)
    source = options.prometheus_options(
        prometheus,
        history,
        step,
        chunk,
        namespace,
        match,
        token_file,
        insecure,
        prometheus_set,
        prometheus_username,
        prometheus_password_file,
    )
    usage, event_frame = options.read_history(err_console, demo, input, events, source, namespace)
    if strategy == "forecast":
        frame, _ = options.forecast_workloads(
            usage, event_frame, settings, source, count_throttling=not ignore_throttling
        )
    else:
        with progress_bar(err_console) as progress:
            task = progress.add_task("ingesting history", total=len(usage))
            frame = recommend_vpa(
                usage,
                event_frame,
                model,
                progress=lambda done, _total: progress.update(task, completed=done),
                checked=True,  # read_history's sources validate what they return
                count_throttling=not ignore_throttling,
            )
    emit(frame, chosen, output)


def emit(frame: pd.DataFrame, fmt: OutputFormat, output: Path | None) -> None:
    """Print a rich table on a terminal, else write the requested text format."""
    if output is None and fmt is OutputFormat.table:
        print_table(build_table(frame, TABLE_TITLE))
        return
    text = render(frame, fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        write_text(output, text)
