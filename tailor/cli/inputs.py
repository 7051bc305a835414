"""Where a command's usage history comes from: the demo fleet, files or a dataset.

Every command that reads history accepts the same flags; this module turns
them into the canonical (usage, events) pair or a clear `typer.BadParameter`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import typer

from recommender.data.schema import DataFormatError, empty_events, read_events, read_usage
from recommender.data.synthetic import demo_fleet
from recommender.data.traces import load_dataset

DATASETS = ("bitbrains", "azure", "google2011")


def load_history(
    demo: bool,
    input: Path | None,
    events: Path | None,
    dataset: str | None,
    dataset_options: dict[str, object] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exactly one source must be named; events only go with --input."""
    chosen = [name for name, on in (("--demo", demo), ("--input", input), ("--dataset", dataset)) if on]
    if len(chosen) != 1:
        raise typer.BadParameter(
            "name exactly one history source: --demo, --input FILE or --dataset NAME"
            + (f" (got {', '.join(chosen)})" if chosen else "")
        )
    if events is not None and input is None:
        raise typer.BadParameter("--events goes with --input")
    try:
        if demo:
            return demo_fleet()
        if dataset is not None:
            if dataset not in DATASETS:
                raise typer.BadParameter(
                    f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}"
                )
            return load_dataset(dataset, **(dataset_options or {})), empty_events()
        assert input is not None
        if not input.is_file():
            raise typer.BadParameter(f"{input}: no such file")
        usage = read_usage(input)
        event_frame = read_events(events) if events is not None else empty_events()
        return usage, event_frame
    except (DataFormatError, FileNotFoundError, OSError) as err:
        raise typer.BadParameter(str(err)) from err
