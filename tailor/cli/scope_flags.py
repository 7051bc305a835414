"""The `--namespace` flag, apart from `tailor.cli.options`.

`tailor.cli.options` imports pandas and the forecaster for the commands that read
usage history; `tailor follow` needs only this flag from it, and a service's start
should not wait for what it never runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

Namespace = Annotated[
    list[str] | None, typer.Option("--namespace", "-n", help="Only these namespaces.")
]
