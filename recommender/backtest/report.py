"""One self-contained HTML report of a backtest: tables plus plots as inline PNGs.

The figures are `recommender.plots`' (the notebooks draw the same ones): usage against
every strategy's requests for a few representative containers (replayed again alone,
which gives the same trajectories since containers never share state), slack against
OOMs and shortfalls per strategy, and the distribution of changes per container-day.
matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from recommender import plots
from recommender.backtest.history import ReplayHistory
from recommender.backtest.metrics import METRIC_NAMES
from recommender.backtest.registry import StrategySpec
from recommender.backtest.result import BASELINE, BacktestResult, representative_rows
from recommender.backtest.runner import replay_rows
from recommender.backtest.settings import format_duration
from recommender.plots import PlotUnavailableError, require_matplotlib

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ReportUnavailableError", "render_report", "require_matplotlib", "write_report"]
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.ratio { color: #666; font-size: 0.85em; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.note { color: #555; font-size: 0.9em; }
"""


ReportUnavailableError = PlotUnavailableError  # the name the CLI catches


def _image(figure: Figure) -> str:
    encoded = base64.b64encode(plots.png(figure)).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{encoded}">'


def _number(value: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _with_ratio(value: float, ratio: float) -> str:
    """A table cell: the value, and below it its ratio to vpa's where there is one."""
    note = "" if math.isnan(ratio) else f'<br><span class="ratio">{ratio:.2f}x vpa</span>'
    return f"<td>{_number(value)}{note}</td>"


def metrics_table(result: BacktestResult) -> str:
    """Metrics side by side; below each value its ratio to the vpa baseline."""
    ratios = result.ratios(BASELINE)
    head = "".join(f"<th>{html.escape(name)}</th>" for name in result.strategies)
    rows = []
    for metric in METRIC_NAMES:
        cells = []
        for name in result.strategies:
            value = result.summary[name][metric]
            cells.append(_with_ratio(value, ratios.get(name, {}).get(metric, math.nan)))
        rows.append(f"<tr><td>{metric}</td>{''.join(cells)}</tr>")
    return f"<table><tr><th>metric</th>{head}</tr>{''.join(rows)}</table>"


def frontier_section(result: BacktestResult) -> str:
    """The frontiers' plot and the slack each strategy reaches at vpa's default risks."""
    if not result.frontiers:
        return ""
    rows = []
    for name in result.strategies:
        reading = result.readings.get(name, {})
        cells = "".join(
            f"<td>{_number(reading.get(slack, math.nan))}</td>"
            for slack in ("cpu_relative_slack", "memory_relative_slack")
        )
        points = len(result.frontiers.get(name, []))
        rows.append(f"<tr><td>{html.escape(name)}</td><td>{points}</td>{cells}</tr>")
    base = result.readings.get(BASELINE, {})
    head = (
        "<tr><th>strategy</th><th>points</th>"
        f"<th>CPU slack at vpa's shortfall ({_number(base.get('cpu_shortfall_rate', math.nan))})"
        "</th><th>memory slack at vpa's OOM rate "
        f"({_number(base.get('oom_per_container_day', math.nan))})</th></tr>"
    )
    figure = _image(plots.frontier_figure(result.frontiers, result.readings))
    return f"""<h2>Frontiers</h2>
<p class="note">Each strategy swept over its risk knobs (small marks: every point; line: the
points no other beats on both slack and risk; large mark: the default). Read off at vpa's
default risks: the least slack reached at no more risk, linear between frontier points.</p>
<table>{head}{"".join(rows)}</table>{budget_section(result)}{figure}"""


def budget_section(result: BacktestResult) -> str:
    """With budgets swept: each budgeted strategy read at vpa's default risks off the
    frontier of one budget's points alone (all budgets' points together would read the
    largest budget whatever it costs in changes), with its ratio to vpa's reading."""
    if not result.budget_readings:
        return ""
    labels = {"cpu_relative_slack": "CPU", "memory_relative_slack": "memory"}
    rows = []
    for budget, slack, readings in result.budget_rows(list(labels)):
        cells = [_with_ratio(value, ratio) for value, ratio in readings]
        rows.append(f"<tr><td>{budget}</td><td>{labels[slack]} slack</td>{''.join(cells)}</tr>")
    head = "".join(f"<th>{html.escape(name)}</th>" for name in result.budget_readings)
    return f"""<h3>Per change budget</h3>
<table><tr><th>changes a day</th><th>reading</th>{head}</tr>{"".join(rows)}</table>"""


def render_report(
    history: ReplayHistory,
    result: BacktestResult,
    specs: Sequence[StrategySpec],
    title: str = "kube-tailor backtest",
    notes: Sequence[str] = (),
    containers: int = 3,
) -> str:
    """The report as one HTML string (every image inline)."""
    rows = representative_rows(result, history, containers)
    keys = history.usage.keys
    sections = []
    for row in rows:
        label = "/".join(str(keys.iloc[row][column]) for column in keys.columns)
        replays = {spec.name: replay_rows(history, spec, [row]) for spec in specs}
        figure = plots.container_figure(replays, title=label)
        sections.append(f"<h3>{html.escape(label)}</h3>{_image(figure)}")
    facts = (
        f"{result.containers} containers, {result.container_days:,.1f} container-days evaluated; "
        f"{result.step_seconds} s windows; warm-up {format_duration(result.warm_up_seconds)} "
        f"per container (excluded)."
    )
    if result.unevaluated_containers:
        facts += f" {result.unevaluated_containers} series shorter than the warm-up were skipped."
    note_html = "".join(f'<p class="note">{html.escape(note)}</p>' for note in notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{STYLE}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{facts}</p>{note_html}
<h2>Metrics</h2>
<p class="note">Slack: share of requested core- or byte-seconds not used. Shortfall: share of
windows using more CPU than requested. OOM: a window whose memory peak exceeded the limit in
force. Changes: resizes per container-day (first setting not counted). Autopilot slack:
(day's average limit - day's p95 usage) / average limit, averaged over container-days. The
oracle resizes every window: it bounds slack and footprint, not churn.</p>
{metrics_table(result)}
<h2>Slack against risk</h2>{_image(plots.tradeoff_figure(result))}
{frontier_section(result)}
<h2>Changes</h2>{_image(plots.changes_figure(result))}
<h2>Representative containers</h2>
<p class="note">The burstiest CPU, the most OOM-killed and the median container: usage (black)
against each strategy's requests.</p>
{"".join(sections)}
</body></html>
"""


def write_report(
    path: Path,
    history: ReplayHistory,
    result: BacktestResult,
    specs: Sequence[StrategySpec],
    title: str = "kube-tailor backtest",
    notes: Sequence[str] = (),
) -> Path:
    """Write the report to `path` and return it."""
    path.write_text(render_report(history, result, specs, title, notes), encoding="utf-8")
    return path
