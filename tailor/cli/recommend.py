"""`tailor recommend`: requests per container from history, as the VPA would write them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

from recommender.recommend import recommend_vpa
from tailor.cli.inputs import load_history
from tailor.cli.output import OutputFormat, build_table, render

STRATEGIES = ("vpa",)


def _progress_bar(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


def recommend_command(
    demo: Annotated[bool, typer.Option("--demo", help="Use the built-in sample fleet.")] = False,
    input: Annotated[
        Path | None, typer.Option("--input", help="Usage history (.csv, .csv.gz, .parquet).")
    ] = None,
    events: Annotated[
        Path | None, typer.Option("--events", help="OOM / eviction events file.")
    ] = None,
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
    usage, event_frame = load_history(demo, input, events, None)
    with _progress_bar(err_console) as progress:
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
