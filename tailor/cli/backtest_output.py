"""How `tailor backtest` writes its result: the table or JSON, per-container rows, the report.

The command draws the report before it writes anything, so a report that cannot be
drawn (no matplotlib) leaves no partial set of files behind.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import typer
from rich import box
from rich.table import Table

from recommender.backtest import METRIC_NAMES, BacktestInputError, BacktestResult
from recommender.backtest.frontier import READINGS
from recommender.backtest.history import ReplayHistory
from recommender.backtest.registry import StrategySpec
from recommender.backtest.result import BASELINE
from tailor.cli.options import writable_path
from tailor.cli.tables import print_table, table_text
from tailor.cli.writing import write_file, write_text

SOURCES = {
    "bitbrains": "Bitbrains GWA-T-12 Rnd trace (Grid Workloads Archive, TU Delft; Shen, van Beek, "
    "Iosup, CCGrid 2015).",
    "azure": "Azure Public Dataset V1 (Cortez et al., Resource Central, SOSP 2017; CC-BY 4.0).",
    "google2011": "Google cluster-data 2011, job series prepared by HiPro-IT.",
}


class BacktestFormat(StrEnum):
    table = "table"
    json = "json"


@dataclass(frozen=True)
class MetricView:
    """How a metric reads in the table: its label, which way is better, its precision."""

    label: str
    better: str  # "lower is better", ...: said once, in the label's row
    kind: str  # "share" / "rare" (a percentage, 1 / 2 decimals), "count" (2), "hours" (0)


METRIC_VIEWS = {
    "cpu_relative_slack": MetricView("CPU slack: requested, unused", "lower is better", "share"),
    "cpu_shortfall_rate": MetricView(
        "CPU shortfall: windows short of usage", "lower is better", "rare"
    ),
    "memory_relative_slack": MetricView(
        "memory slack: requested, unused", "lower is better", "share"
    ),
    "oom_per_container_day": MetricView("OOM kills per container-day", "lower is better", "count"),
    "changes_per_container_day": MetricView(
        "request changes per container-day, mean", "fewer: less churn", "count"
    ),
    "changes_per_container_day_p50": MetricView(
        "request changes per container-day, median", "fewer: less churn", "count"
    ),
    "changes_per_container_day_p99": MetricView(
        "request changes per container-day, p99", "fewer: less churn", "count"
    ),
    "cpu_core_hours_requested": MetricView("CPU core-hours requested", "lower is cheaper", "hours"),
    "memory_gib_hours_requested": MetricView(
        "memory GiB-hours requested", "lower is cheaper", "hours"
    ),
    "autopilot_memory_relative_slack": MetricView(
        "memory slack as GKE Autopilot counts it", "lower is better", "share"
    ),
}
RATIO_NOTE = f"under each figure: its ratio to {BASELINE}"


def figure(value: float, kind: str) -> str:
    """One precision per kind of metric, so that a row's figures line up and compare."""
    if value != value:  # NaN: undefined (e.g. memory on CPU-only data)
        return "n/a"
    if kind in ("share", "rare"):  # a rare event's share needs a decimal more
        return f"{value * 100:.{1 if kind == 'share' else 2}f}%"
    if kind == "hours":
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def _cell(value: float, kind: str, ratio: float | None) -> str:
    text = figure(value, kind)
    if ratio is not None and ratio == ratio and value == value:
        text += f"\n[dim]{ratio:.2f}x[/dim]"
    return text


def metric_label(metric: str) -> str:
    """The metric as people read it, with which way is better, then its key (dim) for JSON
    and the docs."""
    view = METRIC_VIEWS[metric]
    return f"{view.label} ({view.better})\n[dim]{metric}[/dim]"


def _table(title: str, caption: str | None = None) -> Table:
    return Table(
        title=title,
        caption=caption,
        header_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )


def result_table(result: BacktestResult) -> Table:
    """Metrics as rows, strategies as columns; under each value its ratio to vpa."""
    ratios = result.ratios(BASELINE)
    title = f"backtest: {result.containers} containers, {result.container_days:,.1f} container-days"
    table = _table(title, RATIO_NOTE if ratios else None)
    table.add_column("metric", overflow="fold", ratio=1, min_width=20)
    for name in result.strategies:
        table.add_column(name, justify="right", no_wrap=True)
    for metric in METRIC_NAMES:
        kind = METRIC_VIEWS[metric].kind
        cells = []
        for name in result.strategies:
            ratio = ratios[name][metric] if ratios and name != BASELINE else None
            cells.append(_cell(result.summary[name][metric], kind, ratio))
        table.add_row(metric_label(metric), *cells)
    if result.readings:
        for risk, slack in READINGS:
            at = next(iter(result.readings.values()))[risk]
            base = result.readings.get(BASELINE, {}).get(slack, float("nan"))
            kind = METRIC_VIEWS[slack].kind
            cells = []
            for name in result.strategies:
                value = result.readings.get(name, {}).get(slack, float("nan"))
                ratio = value / base if base and name != BASELINE else None
                cells.append(_cell(value, kind, ratio))
            risk_text = figure(at, METRIC_VIEWS[risk].kind)
            label = (
                f"[bold]{METRIC_VIEWS[slack].label} at {BASELINE}'s "
                f"{METRIC_VIEWS[risk].label.split(':')[0]} ({risk_text})[/bold]"
            )
            table.add_row(f"{label}\n[dim]{slack} at {risk}[/dim]", *cells)
    return table


def budget_table(result: BacktestResult) -> Table:
    """With `--budgets`: each budgeted strategy's readings at vpa's default risks off the
    frontier of each budget's points alone, beside vpa's own reading."""
    table = _table("frontier per change budget, read at vpa's default risks", RATIO_NOTE)
    table.add_column("changes a day", justify="right", no_wrap=True)
    table.add_column("reading", overflow="fold", ratio=1)
    for name in result.budget_readings:
        table.add_column(name, justify="right", no_wrap=True)
    for budget, slack, cells in result.budget_rows([slack for _, slack in READINGS]):
        kind = METRIC_VIEWS[slack].kind
        texts = [_cell(value, kind, ratio) for value, ratio in cells]
        table.add_row(str(budget), METRIC_VIEWS[slack].label, *texts)
    return table


FRONTIER_HEADERS = {  # short: seven columns must fit 80
    "cpu_relative_slack": "CPU slack",
    "cpu_shortfall_rate": "CPU short",
    "memory_relative_slack": "mem slack",
    "oom_per_container_day": "OOM /c-day",
    "changes_per_container_day": "changes /c-day",
}


def frontier_table(result: BacktestResult) -> Table:
    """Every point of every strategy's frontier: its setting and the figures it trades."""
    caption = "lower is better in every column; * the default setting; /c-day: per container-day"
    table = _table("frontier: every grid point", caption)
    table.add_column("strategy", no_wrap=True)
    table.add_column("setting", overflow="fold", ratio=1)
    for column in FRONTIER_COLUMNS:
        table.add_column(FRONTIER_HEADERS[column], justify="right", no_wrap=True)
    for name, points in result.frontiers.items():
        for point in points:
            setting = point["setting"]
            text = ", ".join(f"{key}={value}" for key, value in setting.items() if key != "default")
            mark = "*" if setting.get("default") else ""
            figures = [
                _cell(point[metric], METRIC_VIEWS[metric].kind, None) for metric in FRONTIER_COLUMNS
            ]
            table.add_row(name + mark, text or "(defaults)", *figures)
    return table


FRONTIER_COLUMNS = (
    "cpu_relative_slack",
    "cpu_shortfall_rate",
    "memory_relative_slack",
    "oom_per_container_day",
    "changes_per_container_day",
)
PER_CONTAINER_SUFFIXES = (".csv", ".parquet", ".json")
OUTPUT_SUFFIXES = {".txt": BacktestFormat.table, ".json": BacktestFormat.json}
REPORT_SUFFIXES = (".html", ".htm")


def report_path(value: Path | None) -> Path | None:
    """The report is HTML: r.pdf used to get HTML under a name that promised a PDF."""
    path = writable_path(value)
    if path is not None and path.suffix.lower() not in REPORT_SUFFIXES:
        raise typer.BadParameter(f"{path}: the report is HTML; name it .html")
    return path


def per_container_path(value: Path | None) -> Path | None:
    """The per-container file's type comes from its suffix: refuse one we do not write."""
    path = writable_path(value)
    if path is not None and path.suffix not in PER_CONTAINER_SUFFIXES:
        raise typer.BadParameter(
            f"{path}: write per-container metrics to {', '.join(PER_CONTAINER_SUFFIXES)}"
        )
    return path


def distinct_outputs(paths: dict[str, Path | None]) -> None:
    """Refuse two output flags naming one file: the later write silently replaced the
    earlier (`--output r.json --per-container r.json` left only the per-container rows)."""
    seen: dict[Path, str] = {}
    for flag, path in paths.items():
        if path is None:
            continue
        if path.resolve() in seen:
            raise typer.BadParameter(f"{seen[path.resolve()]} and {flag} both name {path}")
        seen[path.resolve()] = flag


def write_per_container(result: BacktestResult, path: Path) -> None:
    frame = result.per_container

    def write(file: Path) -> None:
        if path.suffix == ".parquet":
            frame.to_parquet(file, index=False)
        elif path.suffix == ".json":
            frame.to_json(file, orient="records", indent=1)
        else:
            frame.to_csv(file, index=False)

    write_file(path, write, "--per-container")


def emit(result: BacktestResult, fmt: BacktestFormat, output: Path | None) -> None:
    if fmt is BacktestFormat.json:
        text = result.to_json() + "\n"
        if output is None:
            sys.stdout.write(text)
        else:
            write_text(output, text)
        return
    tables = [result_table(result)]
    if result.budget_readings:
        tables.append(budget_table(result))
    if result.frontiers:
        tables.append(frontier_table(result))
    for table in tables:
        print_table(table)
    if output is not None:
        write_text(output, "\n".join(table_text(table) for table in tables))


def report_possible() -> None:
    """A report that cannot be drawn is refused before the replay, not after it."""
    from recommender.backtest.report import ReportUnavailableError, require_matplotlib

    try:
        require_matplotlib()
    except ReportUnavailableError as error:
        raise typer.BadParameter(str(error), param_hint="--report") from error


def render(
    history: ReplayHistory, result: BacktestResult, specs: list[StrategySpec], dataset: str | None
) -> str:
    """The HTML report, drawn before any output is written: its representative containers
    are replayed again, and a failure there must leave no partial set of files."""
    from recommender.backtest.report import ReportUnavailableError, render_report

    notes = [f"Data: {SOURCES[dataset]}"] if dataset in SOURCES else []
    try:
        return render_report(history, result, specs, notes=notes)
    except (BacktestInputError, ReportUnavailableError) as error:
        raise typer.BadParameter(str(error), param_hint="--report") from error
