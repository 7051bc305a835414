"""The schedule file: `tailor schedule --format json` writes it, `tailor follow` reads it.

It is the contract between the recommender and the updater, so both sides live
here once, and it is checked as strictly as any other input: a malformed row, an
overlap or a non-finite amount refuses the whole file, and nothing in the
cluster changes.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from tailor.names import NAME_RULES, shown
from tailor.quantity import MILLIS_PER_UNIT
from tailor.special_files import regular_file

if TYPE_CHECKING:  # pandas only writes the file; `tailor follow` reads it without
    import pandas as pd

# Amounts above a Kubernetes quantity's int64 range cannot be written back.
MAX_AMOUNT = float(2**63 - 1) / MILLIS_PER_UNIT


class ScheduleError(ValueError):
    """The schedule cannot be followed; the message names the file and the row."""


def aware_time(text: str) -> datetime:
    """An RFC 3339 time with its timezone, in UTC: a bare local time would shift the plan.

    ValueError names what is wrong (the schedule's rows and `tailor follow --at` share it).
    """
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an RFC 3339 time: {text!r}") from None
    if moment.tzinfo is None:
        raise ValueError("must carry a timezone, e.g. 2026-11-23T10:00:00Z")
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise ValueError(f"out of range in UTC: {text!r}") from None


def _finite_amount(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and 0 <= value <= MAX_AMOUNT):
        raise ValueError("must be a finite amount between 0 and a quantity's maximum")
    return value


class ScheduleRow(BaseModel):
    """One period of one container's plan, as `tailor schedule` writes it (cores, bytes)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    namespace: str = Field(min_length=1)
    workload: str = Field(min_length=1)
    container: str = Field(min_length=1)
    start: datetime
    end: datetime
    # Required, though null: `tailor schedule` writes all three, so a missing one is damage.
    cpu: float | None
    memory: float | None
    memory_limit: float | None = Field(alias="memoryLimit")

    @field_validator("namespace", "workload", "container")
    @classmethod
    def _kubernetes_name(cls, value: str, info: ValidationInfo) -> str:
        """Names the updater looks pods up by: one Kubernetes could not hold matches none."""
        pattern, most, allows = NAME_RULES[str(info.field_name)]
        if len(value) > most or not re.fullmatch(pattern, value):
            raise ValueError(
                f"{shown(value)} is not a Kubernetes {info.field_name} name "
                f"(at most {most} {allows})"
            )
        return value

    @field_validator("start", "end", mode="before")
    @classmethod
    def _utc_time(cls, value: object) -> datetime:
        if not isinstance(value, str):
            raise ValueError("must be an RFC 3339 time string")
        return aware_time(value)

    @field_validator("cpu", "memory", "memory_limit", mode="before")
    @classmethod
    def _amount(cls, value: object) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number (cores or bytes) or null")
        if isinstance(value, int) and abs(value) > MAX_AMOUNT:
            value = math.inf  # float() of a huge int overflows: it is out of range either way
        return _finite_amount(float(value))


ContainerKey = tuple[str, str, str]  # namespace, workload, container


def _row_problem(row: ScheduleRow) -> str | None:
    if row.end <= row.start:
        return "end is not after start"
    if row.memory is not None and row.memory_limit is not None and row.memory_limit < row.memory:
        return "memoryLimit is below memory"
    return None


def parse_schedule(text: str, source: str) -> list[ScheduleRow]:
    """The validated rows of a schedule file, or ScheduleError naming `source` and the row."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScheduleError(f"{source}: not JSON ({error.msg} at line {error.lineno})") from None
    except (ValueError, RecursionError) as error:  # a number too long, nesting too deep
        raise ScheduleError(f"{source}: not JSON ({error})") from None
    if not isinstance(document, list):
        raise ScheduleError(f"{source}: expected a JSON list of rows, as `tailor schedule` writes")
    rows: list[ScheduleRow] = []
    for index, item in enumerate(document):
        try:
            row = ScheduleRow.model_validate(item)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "row"
            raise ScheduleError(f"{source}: row {index}, {where}: {first['msg']}") from None
        problem = _row_problem(row)
        if problem:
            raise ScheduleError(f"{source}: row {index}: {problem}")
        rows.append(row)
    _refuse_overlaps(rows, source)
    return rows


def _refuse_overlaps(rows: Iterable[ScheduleRow], source: str) -> None:
    """Two periods of one container that overlap leave the updater two answers."""
    by_key: dict[ContainerKey, list[tuple[int, ScheduleRow]]] = {}
    for index, row in enumerate(rows):
        by_key.setdefault((row.namespace, row.workload, row.container), []).append((index, row))
    for key, periods in by_key.items():
        periods.sort(key=lambda item: item[1].start)
        for (first, before), (second, after) in itertools.pairwise(periods):
            if after.start < before.end:
                low, high = sorted((first, second))
                raise ScheduleError(
                    f"{source}: rows {low} and {high}: periods of {'/'.join(key)} overlap"
                    f" at {after.start.isoformat()}"
                )


SCHEDULE_KEY = "schedule.json"  # the key of the ConfigMap `tailor recommender` writes


def read_schedule(path: Path) -> list[ScheduleRow]:
    """Read and validate a schedule file; ScheduleError for anything unreadable."""
    try:
        regular_file(path)  # a FIFO would block the read forever
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScheduleError(f"cannot read schedule {path}: {error}") from None
    return parse_schedule(text, str(path))


def json_number(value: Any) -> float | None:
    """A plain number for JSON, or None (null) where nothing was measured: a NaN is not JSON."""
    import pandas as pd

    return None if pd.isna(value) else float(value)


def _utc_text(moment: pd.Timestamp) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def schedule_records(schedule: pd.DataFrame) -> list[dict[str, Any]]:
    """The file's rows from a planned schedule frame: numbers in cores and bytes, UTC times."""
    return [
        {
            "namespace": row["namespace"],
            "workload": row["workload"],
            "container": row["container"],
            "start": _utc_text(row["start"]),
            "end": _utc_text(row["end"]),
            "cpu": json_number(row["cpu_request"]),
            "memory": json_number(row["memory_request"]),
            "memoryLimit": json_number(row["memory_limit"]),
        }
        for row in schedule.to_dict(orient="records")
    ]
