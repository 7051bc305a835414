"""What a history file must be before its rows are read: a regular file, with Parquet
columns of the types the tables hold, and names Kubernetes could hold.

A FIFO would block the reader forever and a symlink loop read as "no such file": each is
named as what it is. Parquet carries types, so a column of the wrong type is refused
rather than converted (text read as cores, numbers read as names). Files are the one
source whose names no API server checked: a name Kubernetes cannot hold (a 2 MB pod name)
is refused with its row, where a Prometheus or cluster source never has one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from recommender.data.errors import DataFormatError, fail_at
from tailor.names import NAME_RULES, shown
from tailor.special_files import regular_file

__all__ = ["kubernetes_names", "parquet_types", "regular_file"]


def _parquet_kind(arrow_type: object) -> str:
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):  # pandas' categoricals
        return _parquet_kind(arrow_type.value_type)  # type: ignore[attr-defined]
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        return "number"
    if pa.types.is_timestamp(arrow_type):
        return "time"
    if pa.types.is_null(arrow_type):
        return "empty"  # every value missing: the table's own checks decide
    return str(arrow_type)


def parquet_types(file: Path, text_columns: tuple[str, ...]) -> None:
    """Refuse a Parquet column whose stored type is not the table's: text for names,
    numbers for measurements, a timestamp (or UNIX seconds) for `timestamp`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(file)
    except (pa.ArrowException, OSError) as error:
        raise DataFormatError(str(file), f"not a readable Parquet file: {error}") from None
    for field in schema:
        kind = _parquet_kind(field.type)
        if field.name in text_columns:
            wanted, allowed = "text", {"text", "empty"}
        elif field.name == "timestamp":
            wanted, allowed = "timestamps or UNIX seconds", {"time", "number"}
        else:
            wanted, allowed = "numbers", {"number", "empty"}
        if kind not in allowed:
            raise DataFormatError(
                str(file),
                f"stored as {field.type}, not {wanted} (Parquet columns are not converted)",
                column=field.name,
            )


def kubernetes_names(frame: pd.DataFrame, source: str) -> None:
    """Refuse the first name (in file order) longer than Kubernetes allows for its kind, or
    with a character it does not allow. Each distinct name is checked once."""
    for column, (pattern, most, allows) in NAME_RULES.items():
        if column not in frame:
            continue
        codes, names = pd.factorize(frame[column])
        text = pd.Series(names, dtype="string")
        too_long = (text.str.len() > most).fillna(False).to_numpy(dtype=bool)
        wrong = (~text.str.fullmatch(pattern)).fillna(False).to_numpy(dtype=bool)
        for bad, problem in (
            (too_long, f"is longer than a Kubernetes {column} name may be ({most} characters)"),
            (wrong, f"is not a Kubernetes {column} name ({allows})"),
        ):
            rows = np.zeros(len(codes), dtype=bool)
            rows[codes >= 0] = bad[codes[codes >= 0]]

            def said(i: int, values: pd.Series = frame[column], problem: str = problem) -> str:
                return f"{shown(str(values.iloc[i]))} {problem}"

            fail_at(source, column, rows, said)
