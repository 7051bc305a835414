"""The flags of `tailor backtest` and `tailor hindsight`, declared once.

Both replay the same history (the demo fleet, a file or a shared dataset, with a warm-up
and an optional split), so they share these annotated aliases; the backtest's own
outputs and engine follow.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tailor.cli.backtest_output import BacktestFormat, per_container_path, report_path
from tailor.cli.options import output_path, writable_path

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


Strategies = Annotated[str, typer.Option("--strategies", help="Comma-separated strategy names.")]
Format = Annotated[
    BacktestFormat | None,
    typer.Option("--format", help="table or json (default: the --output suffix's, else table)"),
]
Output = Annotated[
    Path | None,
    typer.Option(
        "--output",
        help="Write the table (.txt) / JSON (.json) to this file.",
        parser=output_path,
        callback=writable_path,
        metavar="FILE",
    ),
]
Report = Annotated[
    Path | None,
    typer.Option(
        "--report",
        help="Write a self-contained HTML report here (.html).",
        parser=output_path,
        callback=report_path,
        metavar="FILE",
    ),
]
PerContainer = Annotated[
    Path | None,
    typer.Option(
        "--per-container",
        help="Per-container metrics (.csv, .parquet or .json).",
        parser=output_path,
        callback=per_container_path,
        metavar="FILE",
    ),
]
Engine = Annotated[
    EngineChoice, typer.Option("--engine", help="local processes or a dask cluster.")
]
Scheduler = Annotated[
    str | None,
    typer.Option("--scheduler", help="Dask scheduler address (default: a LocalCluster)."),
]
Workers = Annotated[
    int | None, typer.Option("--workers", min=1, help="Parallel workers (default: cores).")
]
ShowProgress = Annotated[
    bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")
]
Frontier = Annotated[
    bool,
    typer.Option(
        "--frontier",
        help="Also sweep each strategy's risk knobs over its grid (docs/reference/"
        "frontier.md) and read its slack off the frontier at vpa's default risks.",
    ),
]
Budgets = Annotated[
    str | None,
    typer.Option(
        "--budgets",
        help="With --frontier: changes per day to sweep for strategies with a change "
        "budget, e.g. 6,12,24,unlimited (default: each strategy's own).",
    ),
]
