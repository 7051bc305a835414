"""`tailor schedule`: the forecaster's requests for the next 24 h, one row per update period.

This is what in-place resizes can follow instead of one request sized for the
daily peak. With no source flag it reads the kube context's workloads as `tailor
recommend` does (`cluster_history`). The table shows each step beside the requests in
force now and the change, with the savings of following the plan under it; CSV adds the
current requests to each period. JSON is the schedule file `tailor follow` reads: plain
numbers (cores, bytes; null where memory was not measured) and UTC timestamps, its keys
only.
"""

from __future__ import annotations

import io
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from recommender.data.arrays import AGGREGATE_COLUMNS
from recommender.savings import (
    DEFAULT_CPU_PRICE,
    DEFAULT_MEMORY_PRICE,
    Prices,
    current_requests,
    schedule_changes,
)
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
from tailor.cli.output import NOTE, recommended, resource_cell, summary_table
from tailor.cli.recommend import CpuPrice, MemoryPrice
from tailor.cli.tables import print_table, text_of
from tailor.cli.writing import write_text
from tailor.schedule_file import schedule_records

TITLE = "kube-tailor schedule (next 24 h)"
SUMMARY_TITLE = "requests now → scheduled (mean over the 24 h; all pods)"
ScheduleSummary = Annotated[
    bool,
    typer.Option(
        "--summary/--no-summary",
        help="Under the table: totals per namespace, now and on average under the schedule, "
        "and their cost (JSON stays the schedule file `tailor follow` reads).",
    ),
]


class ScheduleFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


SUFFIXES = {".txt": ScheduleFormat.table, ".json": ScheduleFormat.json, ".csv": ScheduleFormat.csv}
NAMES = list(AGGREGATE_COLUMNS)
REQUESTS = ["cpu_request", "memory_request"]


def schedule_steps(schedule: pd.DataFrame) -> pd.DataFrame:
    """Consecutive periods of a container with the same requests, merged into one row.

    The table is read by people, who want the step function: when the requests
    change and to what; JSON and CSV keep one row per period for programs.
    """
    if schedule.empty:
        return schedule
    ordered = schedule.sort_values([*NAMES, "start"], kind="stable").reset_index(drop=True)
    values = ordered[REQUESTS].astype(float).fillna(-1.0)  # NaN equals NaN here
    same = (ordered[NAMES] == ordered[NAMES].shift()).all(axis=1)
    same &= (values == values.shift()).all(axis=1)
    same &= ordered["start"] == ordered["end"].shift()  # no gap between the two periods
    run = (~same).cumsum()
    grouped = ordered.groupby(run, sort=False)
    steps = grouped.first()
    steps["end"] = grouped["end"].last()
    return steps.reset_index(drop=True)


def schedule_table(schedule: pd.DataFrame) -> Table:
    """One row per step of the plan; each resource's cell reads `current → planned` over the
    change when the current requests are known (`schedule_changes`), as `recommend`'s."""
    steps = schedule_steps(schedule)
    with_current = "cpu_current" in steps
    table = Table(
        title=TITLE, header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )
    # one name column, filled on a container's first step: three narrow ones folded their
    # own headers at 80 columns, and the steps under a name read as its plan
    table.add_column("ns/workload/container", overflow="fold")
    table.add_column("from (UTC)", no_wrap=True)  # the date without its year: 11 columns
    table.add_column("to", no_wrap=True)
    for name in ("cpu", "memory"):
        table.add_column(name, justify="right", no_wrap=True)
    shown = None
    for row in steps.to_dict(orient="records"):
        name = f"{row['namespace']}/{row['workload']}/{row['container']}"
        cells = ["" if name == shown else name]
        shown = name
        cells += [row["start"].strftime("%m-%d %H:%M"), row["end"].strftime("%H:%M")]
        for resource in ("cpu", "memory"):
            if with_current:
                cells.append(resource_cell(row, resource, f"{resource}_request"))
            else:
                cells.append(recommended(resource, row[f"{resource}_request"]))
        table.add_row(*cells)
    if with_current:
        table.caption = NOTE.replace("recommended", "planned")
    return table


def schedule_view(schedule: pd.DataFrame, current: pd.DataFrame, prices: Prices | None) -> Group:
    """The plan beside the requests in force, and (with `prices`) what following it saves."""
    from recommender.savings import savings_summary, schedule_means, with_current

    parts: list[RenderableType] = [schedule_table(schedule_changes(schedule, current))]
    if prices is not None:
        means = with_current(schedule_means(schedule), current)
        parts += [Text(""), summary_table(savings_summary(means, prices), SUMMARY_TITLE)]
    return Group(*parts)


def schedule_command(
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
    fmt: Annotated[
        ScheduleFormat | None,
        typer.Option("--format", help=options.FORMAT_HELP),
    ] = None,
    output: options.Output = None,
    summary: ScheduleSummary = True,
    cpu_price: CpuPrice = DEFAULT_CPU_PRICE,
    memory_price: MemoryPrice = DEFAULT_MEMORY_PRICE,
    forecast_set: options.ForecastSet = None,
    changes_per_day: options.ChangesPerDay = None,
    ignore_throttling: options.IgnoreThrottling = False,
) -> None:
    """Print the forecast schedule of requests per update period for the next 24 h."""
    chosen = options.output_format(fmt, ScheduleFormat.table, output, SUFFIXES)
    settings = options.with_budget(options.forecast_settings(forecast_set), changes_per_day)
    scope = cluster_scope(kubeconfig, context, namespace, all_namespaces, selector)
    choice, url = source_choice(scope, demo, input, events, prometheus)
    source = options.prometheus_options(
        url, history, step, chunk, namespace, match, token_file, insecure, prometheus_set,
        prometheus_username, prometheus_password_file,
    )  # fmt: skip
    usage, event_frame, current = read_chosen(choice, source, Console(stderr=True))
    _, schedule = options.forecast_workloads(
        usage, event_frame, settings, source, count_throttling=not ignore_throttling
    )
    known = current_requests(usage) if current is None else current
    prices = Prices(cpu_price, memory_price) if summary else None
    write_schedule(schedule, known, prices, chosen, output)


def write_schedule(
    schedule: pd.DataFrame,
    current: pd.DataFrame,
    prices: Prices | None,
    chosen: ScheduleFormat,
    output: Path | None,
) -> None:
    """The table (on a terminal or to a file), the schedule file's JSON, or CSV with the
    current requests beside each period."""
    if chosen is ScheduleFormat.table and output is None:
        print_table(schedule_view(schedule, current, prices))
        return
    if chosen is ScheduleFormat.json:  # the file `tailor follow` reads: its keys only
        text = json.dumps(schedule_records(schedule), indent=2, allow_nan=False) + "\n"
    elif chosen is ScheduleFormat.csv:
        buffer = io.StringIO()
        with_current = schedule_changes(schedule, current)
        with_current.drop(columns="pods").to_csv(buffer, index=False)
        text = buffer.getvalue()
    else:
        text = text_of(schedule_view(schedule, current, prices))
    if output is None:
        sys.stdout.write(text)
    else:
        write_text(output, text)
