"""Render recommendation rows as a rich table, JSON, YAML or CSV.

The JSON form is the contract scripts rely on: a list of objects with
`namespace`, `workload`, `container`, and `cpu` / `memory` each holding
`target`, `lowerBound`, `upperBound` as plain numbers (cores, bytes), or null
where nothing is recommended (memory of a series whose memory was not measured).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any

import pandas as pd
import yaml
from rich.table import Table

from tailor.cli import tables
from tailor.quantity import format_cpu, format_memory
from tailor.schedule_file import json_number

BOUNDS = (("target", "target"), ("lowerBound", "lower"), ("upperBound", "upper"))
TABLE_TITLE = "kube-tailor recommendations"  # the same on a terminal and in a file


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"
    csv = "csv"


def quantity_cell(value: Any, formatter: Callable[[float], str]) -> str:
    """A table cell: the formatted quantity, or "n/a" where nothing is recommended."""
    return "n/a" if pd.isna(value) else formatter(float(value))


def human_memory(num_bytes: float) -> str:
    return format_memory(num_bytes, human=True)


def recommendation_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One nested record per container, numbers in cores and bytes."""
    records: list[dict[str, Any]] = []
    for values in frame.to_dict(orient="records"):
        record: dict[str, Any] = {
            "namespace": values["namespace"],
            "workload": values["workload"],
            "container": values["container"],
        }
        for resource in ("cpu", "memory"):
            record[resource] = {
                api: json_number(values[f"{resource}_{column}"]) for api, column in BOUNDS
            }
        said = values.get("explanation")
        if isinstance(said, str) and said:  # NaN for a row with nothing to say
            record["explanation"] = said
        records.append(record)
    return records


def render(frame: pd.DataFrame, fmt: OutputFormat) -> str:
    """Text for json / yaml / csv; tables are printed by `print_table`."""
    if fmt is OutputFormat.json:
        return json.dumps(recommendation_records(frame), indent=2, allow_nan=False) + "\n"
    if fmt is OutputFormat.yaml:
        return str(yaml.safe_dump(recommendation_records(frame), sort_keys=False))
    if fmt is OutputFormat.csv:
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False)
        return buffer.getvalue()
    return tables.table_text(build_table(frame, TABLE_TITLE))


def build_table(frame: pd.DataFrame, title: str) -> Table:
    table = Table(title=title, header_style="bold")
    for name in ("namespace", "workload", "container"):
        table.add_column(name)
    for resource in ("cpu", "memory"):
        for api, _ in BOUNDS:
            table.add_column(f"{resource} {api}", justify="right")
    for values in frame.to_dict(orient="records"):
        cells = [str(values["namespace"]), str(values["workload"]), str(values["container"])]
        cells += [quantity_cell(values[f"cpu_{column}"], format_cpu) for _, column in BOUNDS]
        cells += [quantity_cell(values[f"memory_{column}"], human_memory) for _, column in BOUNDS]
        table.add_row(*cells)
    return table
