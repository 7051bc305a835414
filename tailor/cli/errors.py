"""Errors in the data a command reads, told apart from errors in how it was called.

A bad cell of a history file is no mistake on the command line: click's usage banner
("Usage: tailor recommend [OPTIONS] / Try --help") above it sent users to the flags.
`DataError` prints the problem alone, and exits 2 like a usage error, so scripts that
check for a refused input keep working.
"""

from __future__ import annotations

from typer import _click as click  # typer vendors click: its classes, not the package's


class DataError(click.ClickException):
    """The input's content is at fault: printed without the usage banner, exit 2."""

    exit_code = 2
