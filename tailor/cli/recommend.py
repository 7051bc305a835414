"""`tailor recommend`: requests per container from history, as the VPA would write them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console

from recommender.recommend import recommend_vpa
from tailor.cli.inputs import PrometheusOptions, load_from_prometheus, load_history
from tailor.cli.output import OutputFormat, build_table, render
from tailor.cli.progress import progress_bar

STRATEGIES = ("vpa",)


def recommend_command(
    demo: Annotated[bool, typer.Option("--demo", help="Use the built-in sample fleet.")] = False,
    input: Annotated[
        Path | None, typer.Option("--input", help="Usage history (.csv, .csv.gz, .parquet).")
    ] = None,
    events: Annotated[
        Path | None, typer.Option("--events", help="OOM / eviction events file.")
    ] = None,
    prometheus: Annotated[
        str | None, typer.Option("--prometheus", help="Prometheus base URL to read history from.")
    ] = None,
    history: Annotated[str, typer.Option(help="With --prometheus: how far back.")] = "8d",
    step: Annotated[str, typer.Option(help="With --prometheus: sample period.")] = "5m",
    chunk: Annotated[
        str | None,
        typer.Option(
            help="With --prometheus: range per query [default: 1d, less for steps under 8s]."
        ),
    ] = None,
    namespace: Annotated[
        list[str] | None, typer.Option("--namespace", "-n", help="Only these namespaces.")
    ] = None,
    match: Annotated[
        list[str] | None,
        typer.Option("--match", help="Extra label matcher NAME=VALUE for every query."),
    ] = None,
    token_file: Annotated[
        Path | None, typer.Option("--bearer-token-file", help="Bearer token for Prometheus.")
    ] = None,
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Skip TLS verification of Prometheus.")
    ] = False,
    strategy: Annotated[str, typer.Option(help="Recommendation model.")] = "vpa",
    fmt: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = (
        OutputFormat.table
    ),
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Recommend cpu and memory requests per (namespace, workload, container)."""
    if strategy not in STRATEGIES:
        raise typer.BadParameter(
            f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}",
            param_hint="--strategy",
        )
    err_console = Console(stderr=True)
    if prometheus is not None:
        if demo or input is not None or events is not None:
            raise typer.BadParameter(
                "--prometheus cannot be combined with --demo / --input / --events"
            )
        source = PrometheusOptions(
            url=prometheus,
            history=history,
            step=step,
            chunk=chunk,
            namespaces=tuple(namespace or ()),
            matchers=tuple(match or ()),
            token_file=token_file,
            insecure=insecure,
        )
        usage, event_frame = load_from_prometheus(source, err_console)
    else:
        usage, event_frame = load_history(demo, input, events, None)
    with progress_bar(err_console) as progress:
        task = progress.add_task("ingesting history", total=len(usage))
        frame = recommend_vpa(
            usage,
            event_frame,
            progress=lambda done, _total: progress.update(task, completed=done),
        )
    emit(frame, fmt, output)


def emit(frame: pd.DataFrame, fmt: OutputFormat, output: Path | None) -> None:
    """Print a rich table on a terminal, else write the requested text format."""
    if output is None and fmt is OutputFormat.table:
        Console().print(build_table(frame, "kube-tailor recommendations"))
        return
    text = render(frame, fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)
