"""Reading and writing the canonical tables as CSV (optionally gzipped) or Parquet.

The format is chosen by the file suffix (.csv, .csv.gz, .parquet). Every read
is validated, so a bad file fails with its name, row and column; every write
validates first, so no file we produce can fail to load again.

CSV timestamps are written as ISO-8601 in UTC with a trailing `Z`, at the
coarsest precision (seconds up to microseconds) that loses nothing; on read,
ISO-8601 and UNIX seconds are both accepted. Empty cells mean NaN.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from recommender.data.schema import (
    EVENT_COLUMNS,
    TEXT_COLUMNS,
    USAGE_COLUMNS,
    DataFormatError,
    validate_events,
    validate_usage,
)

SUFFIXES = (".csv", ".csv.gz", ".parquet")
# Only these spellings mean "missing" in numeric cells; key cells are missing only when empty,
# so a namespace called "NA" or "null" stays a name.
NUMERIC_MISSING = ("", "NaN", "nan", "NA", "N/A", "null", "NULL")

PathLike = str | os.PathLike[str]


def _format_of(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    raise DataFormatError(str(path), f"unsupported file type (use one of {', '.join(SUFFIXES)})")


def _read_csv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    text_columns = [name for name in TEXT_COLUMNS if name in columns]
    na_values: dict[str, list[str]] = {name: [""] for name in text_columns}
    na_values.update({name: list(NUMERIC_MISSING) for name in columns if name not in TEXT_COLUMNS})
    try:
        frame = pd.read_csv(
            path,
            dtype=dict.fromkeys(text_columns, "str"),
            keep_default_na=False,
            na_values=na_values,
            skipinitialspace=True,
        )
    except pd.errors.EmptyDataError:
        raise DataFormatError(str(path), "empty file (expected a header row)") from None
    except (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise DataFormatError(str(path), f"not a readable CSV file: {error}") from None
    if not isinstance(frame.index, pd.RangeIndex):
        # pandas reads extra leading fields as an index: a stray first column or a trailing
        # comma on every row used to shift or silently drop a column
        raise DataFormatError(
            str(path), f"more fields than the {len(frame.columns)} of the header row", row=1
        )
    return frame


def _read_parquet(path: Path) -> pd.DataFrame:
    import pyarrow as pa

    try:
        return pd.read_parquet(path)
    except (pa.ArrowException, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise DataFormatError(str(path), f"not a readable Parquet file: {error}") from None


def _read(
    path: PathLike,
    columns: tuple[str, ...],
    validate: Callable[[pd.DataFrame, str], pd.DataFrame],
) -> pd.DataFrame:
    file = Path(path)
    kind = _format_of(file)
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no such file")
    raw = _read_parquet(file) if kind == "parquet" else _read_csv(file, columns)
    return validate(raw, str(file))


def _iso_utc(timestamps: pd.Series) -> np.ndarray:
    """ISO-8601 text ending in Z, at the coarsest unit that keeps every value exact."""
    micros = timestamps.astype("int64").to_numpy()
    unit: Literal["s", "ms", "us"] = "s"
    if np.any(micros % 1_000_000):
        unit = "ms" if not np.any(micros % 1_000) else "us"
    naive: np.ndarray[tuple[int], np.dtype[np.datetime64]] = micros.astype("datetime64[us]")
    return np.datetime_as_string(naive, unit=unit, timezone="UTC")


def _write(frame: pd.DataFrame, path: PathLike) -> None:
    file = Path(path)
    kind = _format_of(file)
    if kind == "parquet":
        frame.to_parquet(file, index=False)
        return
    text = frame.assign(timestamp=_iso_utc(frame["timestamp"]))
    text.to_csv(file, index=False, na_rep="")


def read_usage(path: PathLike) -> pd.DataFrame:
    """A validated, normalised usage table from a .csv, .csv.gz or .parquet file."""
    return _read(path, USAGE_COLUMNS, validate_usage)


def write_usage(frame: pd.DataFrame, path: PathLike) -> None:
    """Validate `frame` and write it in the format the suffix of `path` names."""
    _write(validate_usage(frame, "<frame to write>"), path)


def read_events(path: PathLike) -> pd.DataFrame:
    """A validated, normalised events table (zero rows allowed: a header is enough in CSV)."""
    return _read(path, EVENT_COLUMNS, validate_events)


def write_events(frame: pd.DataFrame, path: PathLike) -> None:
    """Validate `frame` and write it in the format the suffix of `path` names."""
    _write(validate_events(frame, "<frame to write>"), path)
