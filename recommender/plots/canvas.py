"""What every figure shares: the lazy matplotlib import, the canvas, the line styles."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

GIB = 2.0**30
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")
DASHES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (3, 1)), (0, (1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
USAGE_COLOUR = "black"
FRONTIER_PAIRS = (
    ("cpu_relative_slack", "cpu_shortfall_rate", "CPU", "CPU shortfall rate (share of windows)"),
    ("memory_relative_slack", "oom_per_container_day", "memory", "OOM kills per container-day"),
)


class PlotUnavailableError(RuntimeError):
    """A figure cannot be drawn here: matplotlib is not importable."""


def require_matplotlib() -> type[Figure]:
    """matplotlib's Figure, or PlotUnavailableError; a command that will draw checks this
    before its work, so a missing matplotlib costs no run and writes no file."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise PlotUnavailableError("drawing needs matplotlib: pip install matplotlib") from error
    return Figure


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of `width` x `height` inches, laid out without overlaps."""
    return require_matplotlib()(figsize=(width, height), dpi=100, layout="constrained")


def png(figure: Figure) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def style(index: int) -> dict[str, Any]:
    """Colour, dash and marker of the `index`-th line: two lines differ in all three."""
    return {
        "color": COLOURS[index % len(COLOURS)],
        "linestyle": DASHES[index % len(DASHES)],
        "marker": MARKERS[index % len(MARKERS)],
    }


def finish(axes: Axes, title: str, xlabel: str, ylabel: str) -> None:
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(alpha=0.3)
