"""Backtest figures: slack against risk, frontiers, changes, one container's replay."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from recommender.plots import canvas
from recommender.plots.canvas import FRONTIER_PAIRS, GIB, USAGE_COLOUR, finish, style
from tailor.durations import HOUR

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from recommender.backtest.container_blocks import ReplayBlock
    from recommender.backtest.engine import Trajectory
    from recommender.backtest.result import BacktestResult


def tradeoff_figure(result: BacktestResult) -> Figure:
    """Each strategy's slack against its risk: small dots per container, a large one for the
    fleet (memory slack vs OOM kills, CPU slack vs shortfall)."""
    figure = canvas.new_figure(11, 4.4)
    axes_pair = figure.subplots(1, 2)
    for axes, (slack, risk, resource, label) in zip(axes_pair, FRONTIER_PAIRS[::-1], strict=True):
        for index, name in enumerate(result.strategies):
            look = style(index)
            detail = result.per_container[result.per_container["strategy"] == name]
            axes.scatter(
                detail[slack], detail[risk], s=8, alpha=0.25, color=look["color"],
                marker=look["marker"],
            )  # fmt: skip
            fleet = result.summary[name]
            axes.scatter(
                [fleet[slack]], [fleet[risk]], s=90, color=look["color"], marker=look["marker"],
                edgecolor="black", label=name, zorder=3,
            )  # fmt: skip
        axes.set_yscale("symlog", linthresh=0.01)
        finish(
            axes,
            f"{resource}: slack against risk (large: fleet, small: containers)",
            f"{resource} relative slack (share of the request not used)",
            label,
        )
    axes_pair[0].legend(fontsize=8)
    return figure


def frontier_figure(
    frontiers: Mapping[str, Sequence[Mapping[str, Any]]],
    readings: Mapping[str, Mapping[str, float]] | None = None,
) -> Figure:
    """Slack against risk for every point of every strategy's grid (small marks), its
    efficient frontier (line), its default point (large mark), and where `readings` are
    given (`recommender.backtest.frontier.readings`), `vpa`'s default risk (dotted) and
    the slack read off there (crosses)."""
    from recommender.backtest.frontier import efficient  # computed by the library

    figure = canvas.new_figure(11, 4.4)
    panels = figure.subplots(1, 2)
    for axes, (slack, risk, resource, label) in zip(panels, FRONTIER_PAIRS, strict=True):
        drawn = False
        for index, (name, points) in enumerate(frontiers.items()):
            look = style(index)
            line = efficient(points, risk, slack)
            if line.size == 0:
                continue
            drawn = True
            cloud = np.array(
                [(point[risk], point[slack]) for point in points], dtype=np.float64
            ).reshape(-1, 2)
            axes.scatter(
                cloud[:, 0], cloud[:, 1], s=10, alpha=0.4, color=look["color"],
                marker=look["marker"],
            )  # fmt: skip
            axes.plot(
                line[:, 0], line[:, 1], color=look["color"], linestyle=look["linestyle"],
                label=name,
            )  # fmt: skip
            default = [point for point in points if point["setting"].get("default")]
            if default:
                # not clipped: a default at zero risk sits on the axis, half hidden otherwise
                axes.scatter(
                    [default[0][risk]], [default[0][slack]], s=80, color=look["color"],
                    marker=look["marker"], edgecolor="black", zorder=3, clip_on=False,
                )  # fmt: skip
            reading = (readings or {}).get(name, {})
            if np.isfinite(reading.get(slack, np.nan)):
                axes.scatter(
                    [reading[risk]], [reading[slack]], marker="x", s=70, color=look["color"],
                    zorder=4,
                )  # fmt: skip
        at = next(iter((readings or {}).values()), {}).get(risk, np.nan)
        if drawn and np.isfinite(at):
            axes.axvline(at, color="grey", linestyle=":", lw=1)
        axes.set_xscale("symlog", linthresh=0.001)
        axes.set_xlim(left=0)  # no negative risk: symlog's autoscale drew a negative decade
        finish(
            axes,
            f"{resource} frontier (dotted: vpa's default risk; x: read off)",
            label,
            f"{resource} relative slack (share of the request not used)",
        )
        if drawn:
            axes.legend(fontsize=8)
    return figure


def changes_figure(result: BacktestResult) -> Figure:
    """The distribution of request changes per container-day, one curve per strategy."""
    figure = canvas.new_figure(11, 3.8)
    axes = figure.subplots()
    days = result.per_container_day
    for index, name in enumerate(result.strategies):
        part = days[days["strategy"] == name]
        rates = np.sort((part["changes"] / part["evaluated_days"]).to_numpy())
        if rates.size:
            share = np.arange(1, rates.size + 1) / rates.size
            look = style(index)
            axes.step(
                rates, share, where="post", label=name, color=look["color"],
                linestyle=look["linestyle"], lw=1.6,
            )  # fmt: skip
    axes.set_xscale("symlog", linthresh=1)
    finish(
        axes,
        "Request changes per container-day (curves further left change less)",
        "changes in a container-day",
        "share of container-days at or below",
    )
    axes.legend(fontsize=8)
    return figure


def changes_per_day_figure(result: BacktestResult) -> Figure:
    """Mean request changes per day of the fleet, per strategy, over the replay's days."""
    figure = canvas.new_figure(11, 3.6)
    axes = figure.subplots()
    days = result.per_container_day
    highest = 0.0
    for index, name in enumerate(result.strategies):
        part = days[days["strategy"] == name].groupby("day")
        per_day = part["changes"].sum() / part["evaluated_days"].sum()
        look = style(index)
        axes.plot(per_day.index + 1, per_day.to_numpy(), label=name, lw=1.6, markersize=4, **look)
        highest = max(highest, float(per_day.max()) if len(per_day) else 0.0)
    if highest > 50:  # an oracle's hundreds beside a few: a log scale keeps both readable
        axes.set_yscale("symlog", linthresh=1)
    from matplotlib.ticker import MaxNLocator  # drawing: matplotlib is there

    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole days
    finish(
        axes,
        "Request changes per container and day, over the replay",
        "day after the warm-up",
        "changes per container-day",
    )
    axes.legend(fontsize=8, ncols=min(len(result.strategies), 6))
    return figure


def _evaluated_max(values: np.ndarray, start: int) -> float:
    tail = values[start:]
    finite = tail[np.isfinite(tail)]
    return float(finite.max()) if finite.size else 0.0


def container_figure(
    replays: Mapping[str, tuple[ReplayBlock, Trajectory]], title: str = "", column: int = 0
) -> Figure:
    """Usage of one container against each strategy's requests in force (`replays`:
    strategy -> its `replay_rows`; the container is the block's `column`), its OOM kills
    (x) and its count of changes and kills in the legend; the y range fits the evaluated
    windows (the data's original requests before the first decision can be far larger)."""
    figure = canvas.new_figure(11, 5.6)
    cpu_axes, memory_axes = figure.subplots(2, 1, sharex=True)
    if title:
        figure.suptitle(title)
    top = [0.0, 0.0]
    block = None
    for index, (name, (block, trajectory)) in enumerate(replays.items()):
        start = int(block.evaluation_start[column])
        hours = (np.arange(block.usage.n_windows) * block.usage.step) / HOUR
        look = style(index)
        width = 0.8 if name.startswith("oracle") else 1.5
        cpu, memory = trajectory.cpu[:, column], trajectory.memory[:, column] / GIB
        changes = int(trajectory.changed[start:, column].sum())
        killed = np.flatnonzero(trajectory.oom[:, column])
        kills = int(trajectory.oom[start:, column].sum())  # counted as the metrics count
        label = f"{name} ({changes} changes, {kills} OOM after the warm-up)"
        line = {"color": look["color"], "linestyle": look["linestyle"], "lw": width}
        cpu_axes.step(hours, cpu, where="post", label=label, **line)
        memory_axes.step(hours, memory, where="post", **line)
        top = [max(top[0], _evaluated_max(cpu, start)), max(top[1], _evaluated_max(memory, start))]
        if killed.size:
            memory_axes.scatter(
                hours[killed], block.usage.memory[column, killed] / GIB, marker="x",
                color=look["color"], s=30, zorder=3,
            )  # fmt: skip
    if block is None:
        return figure
    start = int(block.evaluation_start[column])
    hours = (np.arange(block.usage.n_windows) * block.usage.step) / HOUR
    usage = {"color": USAGE_COLOUR, "lw": 0.6, "alpha": 0.8}
    cpu_axes.plot(hours, block.usage.cpu[column], label="usage", **usage)
    memory_axes.plot(hours, block.usage.memory[column] / GIB, **usage)
    top = [
        max(top[0], _evaluated_max(block.usage.cpu[column], start)),
        max(top[1], _evaluated_max(block.usage.memory[column] / GIB, start)),
    ]
    warm_up = start * block.usage.step / HOUR
    for axes, highest in zip((cpu_axes, memory_axes), top, strict=True):
        axes.axvspan(0, warm_up, color="grey", alpha=0.12)
        axes.grid(alpha=0.3)
        if highest > 0:
            axes.set_ylim(0, highest * 1.08)
    cpu_axes.set_title("CPU request in force against usage")
    memory_axes.set_title("memory request in force against usage (x: OOM kill)")
    cpu_axes.set_ylabel("CPU (cores)")
    memory_axes.set_ylabel("memory (GiB)")
    memory_axes.set_xlabel("hours since the container's first sample (grey: warm-up)")
    cpu_axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def requests_figure(frame: pd.DataFrame, title: str, ylabel: str = "CPU (cores)") -> Figure:
    """Usage (column "usage") against requests in force (every other column), as steps
    over the frame's time index: a stretch of a replay, closer than `container_figure`."""
    figure = canvas.new_figure(12, 3.6)
    axes = figure.subplots()
    times = frame.index
    axes.step(times, frame["usage"], where="post", color=USAGE_COLOUR, lw=0.7, label="usage")
    for index, column in enumerate(column for column in frame.columns if column != "usage"):
        look = style(index)
        # each line thinner than the one before: where two requests agree both stay seen
        axes.step(
            times, frame[column], where="post", color=look["color"],
            linestyle=look["linestyle"], lw=max(3.0 - 1.2 * index, 1.0), label=f"{column} request",
        )  # fmt: skip
    finish(axes, title, "time (UTC)", ylabel)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure
