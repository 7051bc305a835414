"""Recommendation figures: one workload's usage against both models, savings, what-ifs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from recommender.plots import canvas
from recommender.plots.canvas import COLOURS, GIB, finish, style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from recommender.analysis import WorkloadView


def _band(axes: Axes, row: pd.Series, resource: str, span: tuple[Any, Any], scale: float) -> None:
    """The VPA's lower..upper band and its target across `span` (the recommendation now,
    drawn over the history to compare)."""
    lower, target, upper = (
        row[f"{resource}_{name}"] / scale for name in ("lower", "target", "upper")
    )
    axes.axhspan(lower, upper, color=COLOURS[0], alpha=0.12, label="vpa lower..upper")
    axes.hlines(target, *span, color=COLOURS[0], lw=1.8, linestyle="--", label="vpa target")


def _schedule_steps(axes: Axes, schedule: pd.DataFrame, column: str, scale: float) -> None:
    if schedule.empty:
        return
    times = [*schedule["start"], schedule["end"].iloc[-1]]
    values = [*(schedule[column] / scale), schedule[column].iloc[-1] / scale]
    axes.step(times, values, where="post", color=COLOURS[1], lw=2.0, label="forecast schedule")


def workload_figure(view: WorkloadView) -> Figure:
    """One workload container: each pod's usage, the request (and memory limit) in force,
    the VPA's target and lower..upper band, the forecast with its margin and the next
    24 h schedule, and the OOM kills."""
    figure = canvas.new_figure(12, 6.6)
    cpu_axes, memory_axes = figure.subplots(2, 1, sharex=True)
    figure.suptitle("/".join(view.keys) + ": usage, requests and both recommendations")
    usage = view.usage
    end = view.schedule["end"].max() if len(view.schedule) else usage["timestamp"].max()
    span = (usage["timestamp"].min(), end)
    shades = ("0.1", "0.5", "0.3", "0.65")
    for axes, resource, scale in ((cpu_axes, "cpu", 1.0), (memory_axes, "memory", GIB)):
        for index, (pod, part) in enumerate(usage.groupby("pod", sort=True)):
            axes.plot(
                part["timestamp"], part[resource] / scale, color=shades[index % len(shades)],
                lw=0.6, label=f"usage of {pod}",
            )  # fmt: skip
        in_force = usage.groupby("timestamp")[f"{resource}_request"].max() / scale
        axes.step(
            in_force.index, in_force.to_numpy(), where="post", color=COLOURS[2], lw=1.6,
            linestyle="-.", label="request in force",
        )  # fmt: skip
        _band(axes, view.vpa, resource, span, scale)
        _schedule_steps(axes, view.schedule, f"{resource}_request", scale)
        axes.grid(alpha=0.3)
    if "memory_limit" in usage and usage["memory_limit"].notna().any():
        limit = usage.groupby("timestamp")["memory_limit"].max() / GIB
        memory_axes.step(
            limit.index, limit.to_numpy(), where="post", color=COLOURS[3], lw=1.4,
            linestyle=":", label="limit in force",
        )  # fmt: skip
    if len(view.bands):
        bands = view.bands
        cpu_axes.fill_between(
            bands["start"], bands["cpu_forecast"], bands["cpu_required"], step="post",
            color=COLOURS[4], alpha=0.3, label="forecast margin",
        )  # fmt: skip
        cpu_axes.step(
            bands["start"], bands["cpu_forecast"], where="post", color=COLOURS[4], lw=1.4,
            linestyle=":", label="forecast mean",
        )  # fmt: skip
    if len(view.ooms):
        memory_axes.scatter(
            view.ooms["timestamp"], view.ooms["memory"] / GIB, marker="X", s=80,
            color=COLOURS[1], edgecolor="black", zorder=4, label="OOM kill",
        )  # fmt: skip
    cpu_axes.set_title("CPU (forecast, margin and schedule: the next 24 h)")
    memory_axes.set_title("memory (the forecast's schedule sets request = limit)")
    cpu_axes.set_ylabel("CPU (cores)")
    memory_axes.set_ylabel("memory (GiB)")
    memory_axes.set_xlabel("time (UTC)")
    for axes in (cpu_axes, memory_axes):
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def savings_figure(cpu: pd.DataFrame, memory: pd.DataFrame) -> Figure:
    """Requested now against each model's recommendation: grouped bars per row (say, per
    namespace) of `cpu` (cores) and `memory` (GiB), one colour and hatch per column."""
    rows = max(len(cpu), 1) * max(len(cpu.columns), 1)
    figure = canvas.new_figure(12, 1.6 + 0.3 * rows)
    panels = zip(figure.subplots(1, 2), (cpu, memory), ("cores", "GiB"), strict=True)
    for axes, table, unit in panels:
        height = 0.8 / max(len(table.columns), 1)
        positions = np.arange(len(table))
        for index, column in enumerate(table.columns):
            axes.barh(
                positions + index * height, table[column].to_numpy(), height=height,
                color=COLOURS[index % len(COLOURS)], hatch=("", "//", "..", "xx")[index % 4],
                label=str(column),
            )  # fmt: skip
        middle = positions + height * (len(table.columns) - 1) / 2
        axes.set_yticks(middle, [str(label) for label in table.index])
        axes.invert_yaxis()
        resource = "CPU" if unit == "cores" else "memory"
        finish(axes, f"{resource} requested now and recommended", unit, str(table.index.name))
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def what_if_figure(frame: pd.DataFrame, defaults: Mapping[str, float] | None = None) -> Figure:
    """`recommender.analysis.what_if` rows of several knobs, one row of panels per knob:
    the fleet's CPU target (and the forecast's mean scheduled CPU) with the share of past
    CPU samples above the target, and the fleet's memory target; one legend above all."""
    knobs = list(dict.fromkeys(frame["knob"]))
    figure = canvas.new_figure(12, 2.9 * len(knobs))
    grid = figure.subplots(len(knobs), 2, squeeze=False)
    legend: dict[str, Any] = {}
    for (cpu_axes, memory_axes), knob in zip(grid, knobs, strict=True):
        part = frame[frame["knob"] == knob].sort_values("value")
        cpu_axes.plot(part["value"], part["cpu_target_cores"], label="CPU target", **style(0))
        if part["scheduled_cpu_cores"].notna().any():
            cpu_axes.plot(
                part["value"], part["scheduled_cpu_cores"], label="mean scheduled CPU (24 h)",
                **style(1),
            )  # fmt: skip
        risk = cpu_axes.twinx()
        risk.plot(
            part["value"], part["cpu_samples_above_target"], label="past samples above target",
            **style(2),
        )  # fmt: skip
        risk.set_ylabel("share of past samples\nabove the CPU target")
        memory_axes.plot(
            part["value"], part["memory_target_gib"], label="memory target", **style(3)
        )
        for axes in (cpu_axes, memory_axes):
            if defaults and knob in defaults:
                axes.axvline(defaults[knob], color="grey", lw=1, linestyle=":", label="default")
        finish(cpu_axes, f"{knob}: CPU", knob, "CPU, all containers (cores)")
        finish(memory_axes, f"{knob}: memory", knob, "memory, all containers (GiB)")
        for axes in (cpu_axes, risk, memory_axes):
            for handle, label in zip(*axes.get_legend_handles_labels(), strict=True):
                legend.setdefault(label, handle)
    # one legend for every panel, above them: a legend inside a panel hid its points
    figure.legend(
        list(legend.values()), list(legend), loc="outside upper center", ncols=len(legend),
        fontsize=8,
    )  # fmt: skip
    return figure
