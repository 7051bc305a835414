"""Render recommendation rows as a rich table, JSON, YAML or CSV.

The JSON form is the contract scripts rely on: a list of objects with
`namespace`, `workload`, `container`, and `cpu` / `memory` each holding
`target`, `lowerBound`, `upperBound` as plain numbers (cores, bytes), or null
where nothing is recommended (memory of a series whose memory was not measured);
`current` holds the requests now (`cpu` cores, `memory` bytes, null when unknown),
`severity` how far they are from the recommendation (`recommender.savings`).

The table fits an ordinary terminal: at 80 or 100 columns names wrap whole and no
quantity is cut. Each resource's cell reads `current → target` over the change;
`--wide` adds the bounds and percentages in columns of their own.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

import pandas as pd
import yaml
from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tailor.cli import tables
from tailor.quantity import format_memory
from tailor.schedule_file import json_number

BOUNDS = (("target", "target"), ("lowerBound", "lower"), ("upperBound", "upper"))
TABLE_TITLE = "kube-tailor recommendations"  # the same on a terminal and in a file
UNKNOWN = "?"
STYLES = {"critical": "bold red", "warning": "yellow", "good": "green", "unknown": "dim"}
NOTE = "cell: current → recommended, then the change; ? = current request unknown"


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


def short_cpu(cores: float) -> str:
    """Cores for people: `250m` under a core, else three digits (`1.24`, `12.5`)."""
    if abs(cores) < 1.0:
        return f"{round(cores * 1000)}m"
    return f"{cores:.3g}"


def short_memory(num_bytes: float) -> str:
    """Bytes for people in binary units, three digits: `512Mi`, `1.24Gi`."""
    size = abs(num_bytes)
    for unit, scale in (("Ti", 2.0**40), ("Gi", 2.0**30), ("Mi", 2.0**20), ("Ki", 2.0**10)):
        if size >= scale:
            return f"{num_bytes / scale:.3g}{unit}"
    return f"{num_bytes:.0f}"


SHORT = {"cpu": short_cpu, "memory": short_memory}


def short(resource: str, value: Any) -> str:
    return UNKNOWN if value is None or pd.isna(value) else SHORT[resource](float(value))


def recommended(resource: str, value: Any) -> str:
    """A recommended amount, or "n/a" where nothing is recommended (memory not measured)."""
    return "n/a" if value is None or pd.isna(value) else SHORT[resource](float(value))


def signed(resource: str, value: Any) -> str:
    if value is None or pd.isna(value):
        return UNKNOWN
    text = SHORT[resource](float(value))
    return text if text.startswith("-") else f"+{text}"


def percent(ratio: Any) -> str:
    if ratio is None or pd.isna(ratio) or not math.isfinite(float(ratio)):
        return UNKNOWN
    return f"{float(ratio) * 100:+.0f}%"


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
        if "cpu_current" in values:
            record["current"] = {
                resource: json_number(values[f"{resource}_current"])
                for resource in ("cpu", "memory")
            }
            record["pods"] = int(values["pods"])
            record["severity"] = values["severity"]
        said = values.get("explanation")
        if isinstance(said, str) and said:  # NaN for a row with nothing to say
            record["explanation"] = said
        records.append(record)
    return records


def summary_records(summary: pd.DataFrame) -> dict[str, Any]:
    """The `--summary` document: per namespace and the total."""

    def record(values: Mapping[Any, Any]) -> dict[str, Any]:
        return {
            "containers": int(values["containers"]),
            "known": int(values["known"]),
            "cpu": {"now": values["cpu_now"], "recommended": values["cpu_after"]},
            "memoryGiB": {"now": values["memory_now"], "recommended": values["memory_after"]},
            "costPerMonth": {"now": values["cost_now"], "recommended": values["cost_after"]},
            "savingPerMonth": values["saving"],
        }

    rows = summary.to_dict(orient="records")
    return {
        "summary": {
            "namespaces": {str(r["namespace"]): record(r) for r in rows[:-1]},
            "total": record(rows[-1]),
        }
    }


def render(frame: pd.DataFrame, fmt: OutputFormat, summary: pd.DataFrame | None = None) -> str:
    """Text for json / yaml / csv (a summary as a second document); tables are printed by
    `print_table`."""
    if fmt is OutputFormat.json:
        text = json.dumps(recommendation_records(frame), indent=2, allow_nan=False) + "\n"
        if summary is not None:
            text += json.dumps(summary_records(summary), indent=2, allow_nan=False) + "\n"
        return text
    if fmt is OutputFormat.yaml:
        documents: list[Any] = [recommendation_records(frame)]
        if summary is not None:
            documents.append(summary_records(summary))
        return str(yaml.safe_dump_all(documents, sort_keys=False))
    if fmt is OutputFormat.csv:
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False)
        return buffer.getvalue()
    return tables.text_of(recommendation_view(frame, summary))


def _severity_cell(value: Any) -> Text:
    label = str(value) if isinstance(value, str) else "unknown"
    return Text(label, style=STYLES.get(label, ""))


def resource_cell(values: Mapping[Any, Any], resource: str, planned: str | None = None) -> str:
    """`current → planned` over the change; `planned`: the column (default: the target)."""
    now = short(resource, values.get(f"{resource}_current"))
    after = recommended(resource, values[planned or f"{resource}_target"])
    change = signed(resource, values.get(f"{resource}_change"))
    ratio = percent(values.get(f"{resource}_change_ratio"))
    return f"{now} → {after}\n{change} {ratio}"


def build_table(frame: pd.DataFrame, title: str, wide: bool = False) -> Table:
    """One row per container: names (wrapped whole, never cut), then per resource the
    current request, the recommendation and the change; `wide`: every bound apart."""
    table = Table(
        title=title, header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )
    for name in ("namespace", "workload", "container"):
        table.add_column(name, overflow="fold")
    records = frame.to_dict(orient="records")
    with_current = "cpu_current" in frame
    if wide:
        for resource in ("cpu", "memory"):
            if with_current:
                table.add_column(f"{resource} now", justify="right", no_wrap=True)
            for api, _ in BOUNDS:
                table.add_column(f"{resource} {api}", justify="right", no_wrap=True)
            if with_current:
                table.add_column(f"{resource} change", justify="right", no_wrap=True)
    else:
        for resource in ("cpu", "memory"):
            table.add_column(resource, justify="right", no_wrap=True)
    if with_current:
        table.add_column("severity", no_wrap=True)
    for values in records:
        cells: list[RenderableType] = [
            str(values["namespace"]),
            str(values["workload"]),
            str(values["container"]),
        ]
        for resource in ("cpu", "memory"):
            if not wide and with_current:
                cells.append(resource_cell(values, resource))
                continue
            if not wide:
                cells.append(recommended(resource, values[f"{resource}_target"]))
                continue
            if with_current:
                cells.append(short(resource, values[f"{resource}_current"]))
            cells += [recommended(resource, values[f"{resource}_{c}"]) for _, c in BOUNDS]
            if with_current:
                change = signed(resource, values[f"{resource}_change"])
                cells.append(f"{change} {percent(values[f'{resource}_change_ratio'])}")
        if with_current:
            cells.append(_severity_cell(values["severity"]))
        table.add_row(*cells)
    if with_current and not wide:
        table.caption = NOTE
    return table


SUMMARY_TITLE = "requests now → recommended (all pods; containers with a known request)"


def summary_table(summary: pd.DataFrame, title: str = SUMMARY_TITLE) -> Table:
    """The footer: per namespace and in total, requests now → recommended and their cost."""
    table = Table(
        title=title,
        header_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("namespace", overflow="fold")
    for name in ("containers", "cores", "memory GiB", "cost / month", "saving"):
        table.add_column(name, justify="right", no_wrap=True)
    for values in summary.to_dict(orient="records"):
        name = values["namespace"]
        table.add_row(
            Text("total", style="bold") if name is None or pd.isna(name) else str(name),
            f"{values['known']}/{values['containers']}",
            f"{values['cpu_now']:.3g} → {values['cpu_after']:.3g}",
            f"{values['memory_now']:.3g} → {values['memory_after']:.3g}",
            f"{values['cost_now']:,.0f} → {values['cost_after']:,.0f}",
            f"{values['saving']:,.0f}",
        )
    return table


def explained_rows(frame: pd.DataFrame) -> Group:
    """`--explain`: each container's figures, with its explanation under them."""
    parts: list[RenderableType] = []
    for values in frame.to_dict(orient="records"):
        head = Text(f"{values['namespace']}/{values['workload']}/{values['container']}")
        head.stylize("bold")
        if "severity" in values:
            head.append("  ")
            head.append_text(_severity_cell(values["severity"]))
        parts.append(head)
        for resource in ("cpu", "memory"):
            line = resource_cell(values, resource).replace("\n", "  ")
            if "cpu_current" not in values:
                line = recommended(resource, values[f"{resource}_target"])
            bounds = " / ".join(recommended(resource, values[f"{resource}_{c}"]) for _, c in BOUNDS)
            parts.append(
                Padding(
                    Text(f"{resource}: {line}  (target / lower / upper: {bounds})"), (0, 0, 0, 2)
                )
            )
        said = values.get("explanation")
        why = said if isinstance(said, str) and said else "no explanation"
        parts.append(Padding(Text(f"why: {why}"), (0, 0, 1, 2)))
    return Group(*parts)


def recommendation_view(
    frame: pd.DataFrame,
    summary: pd.DataFrame | None = None,
    wide: bool = False,
    explain: bool = False,
) -> RenderableType:
    """What `tailor recommend` prints as a table: rows (or explained rows), then the
    summary footer."""
    body: RenderableType = (
        explained_rows(frame) if explain else build_table(frame, TABLE_TITLE, wide)
    )
    return body if summary is None else Group(body, Text(""), summary_table(summary))
