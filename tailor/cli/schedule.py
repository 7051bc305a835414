"""`tailor schedule`: the forecaster's requests for the next 24 h, one row per update period.

This is what in-place resizes can follow instead of one request sized for the
daily peak. JSON rows carry plain numbers (cores, bytes; null where memory was
not measured) and UTC timestamps.
"""

from __future__ import annotations

import io
import json
import sys
from enum import StrEnum
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from recommender.data.arrays import AGGREGATE_COLUMNS
from tailor.cli import options
from tailor.cli.output import human_memory, quantity_cell
from tailor.cli.tables import print_table, table_text
from tailor.cli.writing import write_text
from tailor.quantity import format_cpu
from tailor.schedule_file import schedule_records


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
    table = Table(title="kube-tailor schedule (next 24 h)", header_style="bold")
    for name in ("namespace", "workload", "container", "from (UTC)", "to", "cpu", "memory"):
        table.add_column(name, justify="right" if name in ("cpu", "memory") else "left")
    for row in schedule_steps(schedule).to_dict(orient="records"):
        table.add_row(
            str(row["namespace"]),
            str(row["workload"]),
            str(row["container"]),
            row["start"].strftime("%Y-%m-%d %H:%M"),
            row["end"].strftime("%H:%M"),
            quantity_cell(row["cpu_request"], format_cpu),
            quantity_cell(row["memory_request"], human_memory),
        )
    return table


def schedule_command(
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
    forecast_set: options.ForecastSet = None,
    changes_per_day: options.ChangesPerDay = None,
    ignore_throttling: options.IgnoreThrottling = False,
) -> None:
    """Print the forecast schedule of requests per update period for the next 24 h."""
    chosen = options.output_format(fmt, ScheduleFormat.table, output, SUFFIXES)
    settings = options.with_budget(options.forecast_settings(forecast_set), changes_per_day)
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
    _, schedule = options.forecast_workloads(
        usage, event_frame, settings, source, count_throttling=not ignore_throttling
    )
    if chosen is ScheduleFormat.table and output is None:
        print_table(schedule_table(schedule))
        return
    if chosen is ScheduleFormat.json:
        text = json.dumps(schedule_records(schedule), indent=2, allow_nan=False) + "\n"
    elif chosen is ScheduleFormat.csv:
        buffer = io.StringIO()
        schedule.to_csv(buffer, index=False)
        text = buffer.getvalue()
    else:
        text = table_text(schedule_table(schedule))
    if output is None:
        sys.stdout.write(text)
    else:
        write_text(output, text)
