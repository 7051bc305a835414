"""The `tailor` console script: one typer app, one module per command, loaded on use.

Each command's module imports its component (the forecaster pulls in pandas, the
services the Kubernetes client, the report matplotlib), and importing them all cost about
4 CPU-seconds before `tailor --help` printed a line. The app therefore lists its
commands by name and one-line help only (`COMMANDS`), and imports a command's module
when that command runs or shows its own help.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import typer
from typer import _click as click  # typer vendors click: its classes, not the package's
from typer.core import TyperCommand, TyperGroup

HELP = "kube-tailor: a forecasting vertical pod autoscaler for Kubernetes."


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives, and the line `tailor --help` shows for it without loading it."""

    module: str
    function: str
    summary: str


COMMANDS = {
    "recommend": LazyCommand(
        "tailor.cli.recommend",
        "recommend_command",
        "Recommend cpu and memory requests per (namespace, workload, container).",
    ),
    "backtest": LazyCommand(
        "tailor.cli.backtest",
        "backtest_command",
        "Replay usage history through recommendation strategies and compare them.",
    ),
    "schedule": LazyCommand(
        "tailor.cli.schedule",
        "schedule_command",
        "Print the forecast schedule of requests per update period for the next 24 h.",
    ),
    "hindsight": LazyCommand(
        "tailor.cli.hindsight",
        "hindsight_command",
        "Certified lower bound on the relative slack any strategy can reach on this history.",
    ),
    "follow": LazyCommand(
        "tailor.cli.follow",
        "follow_command",
        "Resize running pods in place to the schedule's requests (pods/resize).",
    ),
    "recommender": LazyCommand(
        "tailor.cli.recommender_service",
        "recommender_command",
        "Keep the status of every VPA we serve current, from Prometheus history.",
    ),
    "admission": LazyCommand(
        "tailor.cli.admission",
        "admission_command",
        "Serve the webhook: pods being created get their VPA's recommendation (POST /mutate).",
    ),
}


IN_MEMORY = ("--demo",)  # sources that read no file: pandas needs no pyarrow for them


@contextmanager
def without_pyarrow(arguments: list[str]) -> Iterator[None]:
    """Import pandas, for a command run on the demo fleet, as if pyarrow were not installed.

    pandas imports pyarrow (and pyarrow.compute) whenever it is installed, for its string
    dtype: a third of `tailor recommend --demo`'s start-up, for a fleet built in memory
    that reads and writes no Parquet. Only when pandas is not imported yet (a fresh
    process); pandas then keeps its own string storage for the process.
    """
    blocked = any(flag in arguments for flag in IN_MEMORY) and "pandas" not in sys.modules
    if blocked and "pyarrow" not in sys.modules:
        sys.modules["pyarrow"] = None  # type: ignore[assignment]  # `import` raises ImportError
        try:
            import pandas  # noqa: F401
        finally:
            del sys.modules["pyarrow"]
    yield


def load_command(name: str) -> click.Command:
    """The click command of `name`, its module imported now."""
    where = COMMANDS[name]
    function = getattr(importlib.import_module(where.module), where.function)
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    single.command(name)(function)
    command = typer.main.get_command(single)
    command.name = name
    return command


class LazyGroup(TyperGroup):
    """A group whose commands are `COMMANDS`, each imported only when it is asked for.

    While the group's own help is drawn, a command is a stand-in with its one-line help,
    so `tailor --help` imports no command module; anything else (running a command, its
    help, the docs' reference) gets the loaded command.
    """

    listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        if self.listing:
            summary = COMMANDS[cmd_name].summary
            return TyperCommand(cmd_name, help=summary, short_help=summary)
        return load_command(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        with without_pyarrow(args):  # the command's module is imported here
            return super().resolve_command(ctx, args)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("kube-tailor")
        except PackageNotFoundError:  # run from a checkout that was never installed
            number = "unknown (not installed)"
        typer.echo(f"kube-tailor {number}")
        raise typer.Exit()


app = typer.Typer(
    name="tailor",
    cls=LazyGroup,
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version, is_eager=True
    ),
) -> None:
    """kube-tailor: a forecasting vertical pod autoscaler for Kubernetes."""


if __name__ == "__main__":
    app()
