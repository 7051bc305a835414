"""The project's figures: one implementation for the notebooks and the backtest's HTML report.

Every function takes the library's own frames and results and returns a matplotlib
`Figure` drawn on the Agg canvas directly: no pyplot, so no global backend switch and
no figure kept alive by a registry (a notebook displays the returned figure; the report
encodes it with `png`). matplotlib is imported inside `require_matplotlib`, never at
module import, so a command that never draws (the CLI) never pays for it.

The module only draws: what a figure shows is computed by the library first (a
replay, a recommendation), so the figures import nothing but numpy and pandas at run time.
Lines of different strategies differ in colour and in dash or marker, so they can be
told apart in grey print and where they overlap; every axis carries its unit and every
figure a title.
"""

from recommender.plots.backtest import (
    changes_figure,
    changes_per_day_figure,
    container_figure,
    frontier_figure,
    requests_figure,
    tradeoff_figure,
)
from recommender.plots.canvas import (
    PlotUnavailableError,
    new_figure,
    png,
    require_matplotlib,
    style,
)
from recommender.plots.recommendations import savings_figure, what_if_figure, workload_figure

__all__ = [
    "PlotUnavailableError",
    "changes_figure",
    "changes_per_day_figure",
    "container_figure",
    "frontier_figure",
    "new_figure",
    "png",
    "requests_figure",
    "require_matplotlib",
    "savings_figure",
    "style",
    "tradeoff_figure",
    "what_if_figure",
    "workload_figure",
]
