"""One self-contained HTML report of a backtest: tables plus plots as inline PNGs.

Needs matplotlib (drawn with the Agg canvas directly: no pyplot, no global
backend switch). The plots: usage against every strategy's requests for a few
representative containers (replayed again alone, which gives the same
trajectories since containers never share state), slack against OOMs and
shortfalls per strategy, and the distribution of changes per container-day.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from recommender.backtest.history import ReplayHistory
from recommender.backtest.metrics import GIB, METRIC_NAMES
from recommender.backtest.registry import StrategySpec
from recommender.backtest.result import BASELINE, BacktestResult, representative_rows
from recommender.backtest.runner import replay_rows
from recommender.backtest.settings import format_duration
from tailor.durations import HOUR

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.ratio { color: #666; font-size: 0.85em; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.note { color: #555; font-size: 0.9em; }
"""


class ReportUnavailableError(RuntimeError):
    """The report cannot be drawn here: matplotlib is not importable."""


def require_matplotlib() -> type[Figure]:
    """matplotlib's Figure, or ReportUnavailableError; a command asking for a report checks
    this before its replay, so a missing matplotlib costs no run and writes no file."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ReportUnavailableError(
            "the HTML report needs matplotlib: pip install matplotlib"
        ) from error
    return Figure


def _figure(width: float, height: float) -> Figure:
    return require_matplotlib()(figsize=(width, height), dpi=100, layout="constrained")


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{encoded}">'


def _number(value: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def metrics_table(result: BacktestResult) -> str:
    """Metrics side by side; below each value its ratio to the vpa baseline."""
    ratios = result.ratios(BASELINE)
    head = "".join(f"<th>{html.escape(name)}</th>" for name in result.strategies)
    rows = []
    for metric in METRIC_NAMES:
        cells = []
        for name in result.strategies:
            value = result.summary[name][metric]
            ratio = ratios.get(name, {}).get(metric, float("nan"))
            note = "" if math.isnan(ratio) else f'<br><span class="ratio">{ratio:.2f}x vpa</span>'
            cells.append(f"<td>{_number(value)}{note}</td>")
        rows.append(f"<tr><td>{metric}</td>{''.join(cells)}</tr>")
    return f"<table><tr><th>metric</th>{head}</tr>{''.join(rows)}</table>"


def _tradeoff_plot(result: BacktestResult) -> str:
    figure = _figure(11, 4.2)
    memory_axes, cpu_axes = figure.subplots(1, 2)
    pairs = (
        (memory_axes, "memory_relative_slack", "oom_per_container_day", "OOMs per container-day"),
        (cpu_axes, "cpu_relative_slack", "cpu_shortfall_rate", "CPU shortfall rate"),
    )
    for axes, slack, risk, label in pairs:
        for index, name in enumerate(result.strategies):
            colour = COLOURS[index % len(COLOURS)]
            detail = result.per_container[result.per_container["strategy"] == name]
            axes.scatter(detail[slack], detail[risk], s=8, alpha=0.25, color=colour)
            fleet = result.summary[name]
            axes.scatter(
                [fleet[slack]],
                [fleet[risk]],
                s=90,
                color=colour,
                edgecolor="black",
                label=name,
                zorder=3,
            )
        axes.set_xlabel(slack.replace("_", " "))
        axes.set_ylabel(label)
        axes.set_yscale("symlog", linthresh=0.01)
        axes.grid(alpha=0.3)
    memory_axes.set_title("memory: slack vs OOMs (large dots: fleet, small: containers)")
    cpu_axes.set_title("CPU: slack vs shortfall")
    memory_axes.legend(fontsize=8)
    return _png(figure)


def _changes_plot(result: BacktestResult) -> str:
    figure = _figure(11, 3.6)
    axes = figure.subplots()
    days = result.per_container_day
    for index, name in enumerate(result.strategies):
        part = days[days["strategy"] == name]
        rates = np.sort((part["changes"] / part["evaluated_days"]).to_numpy())
        if rates.size:
            share = np.arange(1, rates.size + 1) / rates.size
            axes.step(rates, share, where="post", label=name, color=COLOURS[index % len(COLOURS)])
    axes.set_xscale("symlog", linthresh=1)
    axes.set_xlabel("changes in a container-day")
    axes.set_ylabel("share of container-days at or below")
    axes.set_title("distribution of changes per container-day")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    return _png(figure)


def _evaluated_max(values: np.ndarray, start: int) -> float:
    tail = values[start:]
    finite = tail[np.isfinite(tail)]
    return float(finite.max()) if finite.size else 0.0


def _container_plot(history: ReplayHistory, specs: Sequence[StrategySpec], row: int) -> str:
    """Usage against each strategy's requests; the y range fits the evaluated windows
    (the data's original requests before the first decision can be far larger)."""
    figure = _figure(11, 5.2)
    cpu_axes, memory_axes = figure.subplots(2, 1, sharex=True)
    block = None
    top = [0.0, 0.0]
    for index, spec in enumerate(specs):
        block, trajectory = replay_rows(history, spec, [row])
        start = int(block.evaluation_start[0])
        hours = (np.arange(block.usage.n_windows) * block.usage.step) / HOUR
        colour = COLOURS[index % len(COLOURS)]
        line = {"lw": 0.7, "alpha": 0.6} if spec.name.startswith("oracle") else {"lw": 1.4}
        cpu, memory = trajectory.cpu[:, 0], trajectory.memory[:, 0] / GIB
        cpu_axes.step(hours, cpu, where="post", color=colour, label=spec.name, **line)
        memory_axes.step(hours, memory, where="post", color=colour, **line)
        top = [max(top[0], _evaluated_max(cpu, start)), max(top[1], _evaluated_max(memory, start))]
        killed = np.flatnonzero(trajectory.oom[:, 0])
        if killed.size:
            memory_axes.scatter(
                hours[killed],
                block.usage.memory[0, killed] / GIB,
                marker="x",
                color=colour,
                s=18,
                zorder=3,
            )
    if block is None:
        return ""
    start = int(block.evaluation_start[0])
    hours = (np.arange(block.usage.n_windows) * block.usage.step) / HOUR
    cpu_axes.plot(hours, block.usage.cpu[0], color="black", lw=0.6, alpha=0.8, label="usage")
    memory_axes.plot(hours, block.usage.memory[0] / GIB, color="black", lw=0.6, alpha=0.8)
    top = [
        max(top[0], _evaluated_max(block.usage.cpu[0], start)),
        max(top[1], _evaluated_max(block.usage.memory[0] / GIB, start)),
    ]
    warm_up = start * block.usage.step / HOUR
    for axes, highest in zip((cpu_axes, memory_axes), top, strict=True):
        axes.axvspan(0, warm_up, color="grey", alpha=0.12)
        axes.grid(alpha=0.3)
        if highest > 0:
            axes.set_ylim(0, highest * 1.08)
    cpu_axes.set_ylabel("CPU (cores)")
    memory_axes.set_ylabel("memory (GiB)")
    memory_axes.set_xlabel("hours since the container's first sample (grey: warm-up; x: OOM)")
    cpu_axes.legend(fontsize=8, ncols=len(specs) + 1)
    return _png(figure)


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
        label = "/".join(html.escape(str(keys.iloc[row][column])) for column in keys.columns)
        sections.append(f"<h3>{label}</h3>{_container_plot(history, specs, row)}")
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
<h2>Slack against risk</h2>{_tradeoff_plot(result)}
<h2>Changes</h2>{_changes_plot(result)}
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
