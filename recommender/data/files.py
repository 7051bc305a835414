"""Reading and writing the canonical tables as CSV (optionally gzipped) or Parquet.

The format is chosen by the file suffix (.csv, .csv.gz, .parquet). Every read
is validated, so a bad file fails with its name, row and column; every write
validates first, so no file we produce can fail to load again.

CSV timestamps are written as ISO-8601 in UTC with a trailing `Z`, at the
coarsest precision (seconds up to microseconds) that loses nothing; on read,
ISO-8601 and UNIX seconds are both accepted. Empty cells mean NaN.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, TextIO

import numpy as np
import pandas as pd

from recommender.data.input_checks import kubernetes_names, parquet_types, regular_file
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


class _SeparatorCounter(io.RawIOBase):
    """A CSV file's bytes on their way to pandas, counting the commas outside quotes.

    pandas pads a row with fewer fields than the header with empty ones, so a line cut
    short (an interrupted download) read as zeros and "not measured". Counting on the way
    costs one byte scan and no second read, which matters most for a .csv.gz.
    """

    def __init__(self, raw: io.BufferedIOBase) -> None:
        self._raw = raw
        self.separators = 0
        self._in_quotes = False  # a quoted field runs on past the last chunk

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        if not self._in_quotes and b'"' not in data:
            self.separators += data.count(b",")
            return len(data)
        raw = np.frombuffer(data, dtype=np.uint8)
        # inside quotes after an odd number of them ("" within a quoted field keeps parity)
        quoted = np.bitwise_xor.accumulate(raw == ord('"')) ^ self._in_quotes
        self.separators += int(np.count_nonzero((raw == ord(",")) & ~quoted))
        self._in_quotes = bool(quoted[-1]) if quoted.size else self._in_quotes
        return len(data)


def _gzipped(path: Path) -> bool:
    return path.name.lower().endswith(".gz")


def _open_binary(path: Path) -> io.BufferedIOBase:
    return gzip.open(path, "rb") if _gzipped(path) else path.open("rb")


def _open_text(path: Path) -> TextIO:
    if _gzipped(path):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def _read_csv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    text_columns = [name for name in TEXT_COLUMNS if name in columns]
    na_values: dict[str, list[str]] = {name: [""] for name in text_columns}
    na_values.update({name: list(NUMERIC_MISSING) for name in columns if name not in TEXT_COLUMNS})
    try:
        with _open_binary(path) as raw:
            counter = _SeparatorCounter(raw)
            frame = pd.read_csv(
                io.BufferedReader(counter, 1 << 20),
                dtype=dict.fromkeys(text_columns, "str"),
                keep_default_na=False,
                na_values=na_values,
                skipinitialspace=True,
                compression=None,
            )
    except pd.errors.EmptyDataError:
        raise DataFormatError(str(path), "empty file (expected a header row)") from None
    except (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise DataFormatError(str(path), f"not a readable CSV file: {error}") from None
    width = len(frame.columns)
    if not isinstance(frame.index, pd.RangeIndex):
        # pandas reads extra leading fields as an index: a stray first column or a trailing
        # comma on every row used to shift or silently drop a column
        raise DataFormatError(str(path), f"more fields than the {width} of the header row", row=1)
    # pandas refuses rows longer than the header, so every line holds at most width - 1
    # separators and a total below that means a short row; a quote inside an unquoted
    # field can also put the count off, so the rows are then counted one by one
    if counter.separators != (width - 1) * (len(frame) + 1):
        _refuse_short_rows(path, [str(name) for name in frame.columns])
    return frame


def _data_rows(path: Path) -> Iterator[tuple[int, int, list[str]]]:
    """(1-based data row, file line it starts on, its fields) of a CSV file, counted as
    pandas counts them: quotes may span lines, blank lines are skipped.

    Python's csv reader splits like pandas but at several times its cost, hence only
    when a row must be found (a short row, an error to place in the file).
    """
    with _open_text(path) as text:
        records = csv.reader(text, skipinitialspace=True)
        try:
            next(records, None)
            row, read = 0, records.line_num
            for fields in records:
                start, read = read + 1, records.line_num
                if not fields or (len(fields) == 1 and not fields[0].strip()):
                    continue  # a blank line, which pandas skips
                row += 1
                yield row, start, fields
        except csv.Error as error:
            raise DataFormatError(str(path), f"not a readable CSV file: {error}") from None


def _refuse_short_rows(path: Path, header: list[str]) -> None:
    """Raise for the first data row with fewer fields than `header`."""
    for row, line, fields in _data_rows(path):
        if len(fields) < len(header):
            raise DataFormatError(
                str(path),
                f"missing field: the row has {len(fields)} of the header's "
                f"{len(header)} fields (a line cut short?)",
                row=row,
                column=header[len(fields)],
                line=line,
            )


def _placed(error: DataFormatError, path: Path) -> DataFormatError:
    """`error` naming the file line of its data row too, so that an editor finds it."""
    if error.row is None or error.line is not None:
        return error
    try:
        for row, line, _ in _data_rows(path):
            if row == error.row:
                return error.at_line(line)
    except DataFormatError:  # a row Python's reader refuses (a 2 MB field): name the row
        pass
    return error


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
    regular_file(file)
    if kind == "parquet":
        parquet_types(file, TEXT_COLUMNS)
    if kind == "parquet":  # a Parquet row is no line of text
        raw = _read_parquet(file)
        table = validate(raw, str(file))
        kubernetes_names(raw, str(file))  # after the table's own checks: names are non-empty
        return table
    try:
        raw = _read_csv(file, columns)
        table = validate(raw, str(file))
        kubernetes_names(raw, str(file))
    except DataFormatError as error:
        raise _placed(error, file) from None
    return table


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
