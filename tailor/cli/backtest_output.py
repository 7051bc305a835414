"""How `tailor backtest` writes its result: the table or JSON, per-container rows, the report.

The command draws the report before it writes anything, so a report that cannot be
drawn (no matplotlib) leaves no partial set of files behind.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path

import typer
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


def _cell(value: float, ratio: float | None) -> str:
    if value != value:  # NaN: undefined (e.g. memory on CPU-only data)
        return "n/a"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if ratio is not None and ratio == ratio:
        text += f"\n[dim]{ratio:.2f}x[/dim]"
    return text


def result_table(result: BacktestResult) -> Table:
    """Metrics as rows, strategies as columns; under each value its ratio to vpa."""
    ratios = result.ratios(BASELINE)
    title = (
        f"backtest: {result.containers} containers, {result.container_days:,.1f} container-days"
        + (f" (grey: ratio to {BASELINE})" if ratios else "")
    )
    table = Table(title=title, header_style="bold")
    table.add_column("metric", no_wrap=True)
    for name in result.strategies:
        table.add_column(name, justify="right")
    for metric in METRIC_NAMES:
        cells = []
        for name in result.strategies:
            ratio = ratios[name][metric] if ratios and name != BASELINE else None
            cells.append(_cell(result.summary[name][metric], ratio))
        table.add_row(metric, *cells)
    if result.readings:
        for risk, slack in READINGS:
            at = next(iter(result.readings.values()))[risk]
            base = result.readings.get(BASELINE, {}).get(slack, float("nan"))
            cells = []
            for name in result.strategies:
                value = result.readings.get(name, {}).get(slack, float("nan"))
                ratio = value / base if base and name != BASELINE else None
                cells.append(_cell(value, ratio))
            label = f"{slack} at vpa's {risk} ({_cell(at, None)})"
            table.add_row(f"[bold]{label}[/bold]", *cells)
    return table


def frontier_table(result: BacktestResult) -> Table:
    """Every point of every strategy's frontier: its setting and the figures it trades."""
    table = Table(title="frontier: every grid point (* the default)", header_style="bold")
    for column in ("strategy", "setting", *FRONTIER_COLUMNS):
        table.add_column(column, justify="left" if column in ("strategy", "setting") else "right")
    for name, points in result.frontiers.items():
        for point in points:
            setting = point["setting"]
            text = ", ".join(f"{key}={value}" for key, value in setting.items() if key != "default")
            mark = "*" if setting.get("default") else ""
            figures = [_cell(point[metric], None) for metric in FRONTIER_COLUMNS]
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
