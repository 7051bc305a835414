"""The `tailor` console script: one typer app, one module per command."""

from __future__ import annotations

import typer

from tailor.cli.admission import admission_command
from tailor.cli.backtest import backtest_command
from tailor.cli.follow import follow_command
from tailor.cli.hindsight import hindsight_command
from tailor.cli.recommend import recommend_command
from tailor.cli.recommender_service import recommender_command
from tailor.cli.schedule import schedule_command

app = typer.Typer(
    name="tailor",
    help="kube-tailor: a forecasting vertical pod autoscaler for Kubernetes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("recommend")(recommend_command)
app.command("backtest")(backtest_command)
app.command("schedule")(schedule_command)
app.command("hindsight")(hindsight_command)
app.command("follow")(follow_command)
app.command("recommender")(recommender_command)
app.command("admission")(admission_command)


@app.callback()
def main() -> None:
    """kube-tailor: a forecasting vertical pod autoscaler for Kubernetes."""


if __name__ == "__main__":
    app()
