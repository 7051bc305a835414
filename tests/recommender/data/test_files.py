"""CSV and Parquet round trips of the canonical tables: exact values, UTC kept."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recommender.data.files import read_events, read_usage, write_events, write_usage
from recommender.data.schema import (
    TIMESTAMP_DTYPE,
    DataFormatError,
    empty_events,
    validate_events,
    validate_usage,
)

SUFFIXES = ["csv", "csv.gz", "parquet"]


def awkward_usage() -> pd.DataFrame:
    """Values that a lossy writer would change: thirds, huge bytes, sub-second times, NaN."""
    times = pd.to_datetime(
        ["2024-03-01T00:00:00.25Z", "2024-03-01T00:05:00Z", "2024-03-01T00:00:00Z"],
        utc=True,
        format="ISO8601",
    )
    return pd.DataFrame(
        {
            "timestamp": times,
            "namespace": ["nan", "nan", "prod"],  # a name, not a missing value
            "workload": ["web", "web", "db"],
            "pod": ["web-1", "web-1", "db-0"],
            "container": ["app", "app", "postgres"],
            "cpu": [1 / 3, 0.1, 2.0**-40],
            "memory": [1.5e12 + 0.5, 7.0, np.nan],  # db-0 is a CPU-only series
            "cpu_request": [0.25, 0.25, np.nan],
            "memory_limit": [2.0**31, 2.0**31, 1e10],
            "cpu_throttled": [1 / 7, 0.0, np.nan],  # db-0 has no CPU limit
        }
    )


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_usage_round_trip_is_exact(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"usage.{suffix}"
    expected = validate_usage(awkward_usage())
    write_usage(awkward_usage(), path)
    loaded = read_usage(path)
    pd.testing.assert_frame_equal(loaded, expected, check_exact=True)
    assert str(loaded["timestamp"].dtype) == TIMESTAMP_DTYPE
    assert loaded["timestamp"].iloc[0] == pd.Timestamp("2024-03-01T00:00:00.25Z")


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_events_round_trip_is_exact(tmp_path: Path, suffix: str) -> None:
    events = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(["2024-03-01T12:00:07Z", "2024-03-02T00:00:00Z"]),
            "namespace": ["prod", "prod"],
            "pod": ["web-1", "web-2"],
            "container": ["app", "app"],
            "reason": ["OOMKilled", "Evicted"],
            "memory": [2.0**31 + 1, 1 / 3],
        }
    )
    path = tmp_path / f"events.{suffix}"
    write_events(events, path)
    pd.testing.assert_frame_equal(read_events(path), validate_events(events), check_exact=True)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_no_events_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"events.{suffix}"
    write_events(empty_events(), path)
    pd.testing.assert_frame_equal(read_events(path), empty_events())


def test_csv_is_iso_utc_with_empty_cells_for_nan(tmp_path: Path) -> None:
    path = tmp_path / "usage.csv"
    write_usage(awkward_usage(), path)
    lines = path.read_text().splitlines()
    assert lines[0] == (
        "timestamp,namespace,workload,pod,container,cpu,memory,cpu_request,memory_limit,"
        "cpu_throttled"
    )
    # sorted by namespace: "NA" < "prod"; sub-second precision only because one value needs it
    assert lines[1].startswith("2024-03-01T00:00:00.250Z,nan,web,web-1,app,")
    assert (
        lines[3]
        == "2024-03-01T00:00:00.000Z,prod,db,db-0,postgres,9.094947017729282e-13,,,10000000000.0,"
    )
    write_usage(awkward_usage().iloc[1:2], path)
    assert path.read_text().splitlines()[1].startswith("2024-03-01T00:05:00Z,")


def test_gzip_csv_is_really_compressed(tmp_path: Path) -> None:
    path = tmp_path / "usage.csv.gz"
    write_usage(awkward_usage(), path)
    with gzip.open(path, "rt") as handle:
        assert handle.readline().startswith("timestamp,")


def test_writing_validates_first(tmp_path: Path) -> None:
    frame = awkward_usage()
    frame.loc[0, "cpu"] = -1.0
    path = tmp_path / "usage.parquet"
    with pytest.raises(DataFormatError, match=r"<frame to write>: row 1, column 'cpu'"):
        write_usage(frame, path)
    assert not path.exists()


def test_parquet_errors_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "usage.parquet"
    broken.write_bytes(b"not parquet at all")
    with pytest.raises(DataFormatError, match=r"usage\.parquet: not a readable Parquet file"):
        read_usage(broken)
    frame = awkward_usage()
    frame["cpu"] = ["0.1", "0.2", "0.3"]  # numbers as text: refused, not converted
    frame.to_parquet(tmp_path / "typed.parquet")
    stored = r"typed.parquet: column 'cpu': stored as (large_)?string, not numbers"
    with pytest.raises(DataFormatError, match=stored):
        read_usage(tmp_path / "typed.parquet")


def test_parquet_with_unix_seconds_is_accepted(tmp_path: Path) -> None:
    frame = validate_usage(awkward_usage()).drop(columns="workload")
    frame["timestamp"] = [1_700_000_000, 1_700_000_300, 1_700_000_000]
    frame.to_parquet(tmp_path / "usage.parquet")
    loaded = read_usage(tmp_path / "usage.parquet")
    assert loaded["timestamp"].iloc[0] == pd.Timestamp(1_700_000_000, unit="s", tz="UTC")


@pytest.mark.parametrize(
    "rows",
    [
        ["x,2024-01-01T00:00:00Z,a,p,c,0.5,100", "y,2024-01-01T00:05:00Z,a,p,c,0.5,100"],
        ["2024-01-01T00:00:00Z,a,p,c,0.5,100,", "2024-01-01T00:05:00Z,a,p,c,0.5,100,"],
    ],
    ids=["stray-first-column", "trailing-comma"],
)
def test_csv_rows_longer_than_the_header_are_refused(tmp_path: Path, rows: list[str]) -> None:
    """pandas made the extra field an index: a stray column vanished and the rest was read."""
    path = tmp_path / "usage.csv"
    path.write_text("\n".join(["timestamp,namespace,pod,container,cpu,memory", *rows]) + "\n")
    with pytest.raises(DataFormatError, match="row 1: more fields than the 6 of the header"):
        read_usage(path)


SHORT_HEADER = "timestamp,namespace,pod,container,cpu,memory"


def _write_csv(path: Path, text: str) -> None:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)


@pytest.mark.parametrize("suffix", ["csv", "csv.gz"])
@pytest.mark.parametrize(
    ("rows", "row", "column"),
    [
        # an interrupted download: the last line stops inside the cpu field
        (["2024-01-01T00:00:00Z,a,p,c,0.5,100", "2024-01-01T00:05:00Z,a,p,c,0."], 2, "memory"),
        (["2024-01-01T00:00:00Z,a,p,c", "", "2024-01-01T00:05:00Z,a,p,c,0.5,100"], 1, "cpu"),
        (
            ['"2024-01-01T00:00:00Z","a,b",p,c,0.5,1', '"2024-01-01T00:05:00Z","a,b",p,c,0.5'],
            2,
            "memory",
        ),
    ],
    ids=["truncated-last-line", "short-first-row", "quoted-commas-elsewhere"],
)
def test_csv_rows_shorter_than_the_header_are_refused(
    tmp_path: Path, suffix: str, rows: list[str], row: int, column: str
) -> None:
    """pandas pads a short row with empty fields: it read as cpu 0 and memory "not measured"."""
    path = tmp_path / f"usage.{suffix}"
    _write_csv(path, "\r\n".join([SHORT_HEADER, *rows]))
    with pytest.raises(
        DataFormatError, match=f"row {row}, column '{column}': missing field"
    ) as info:
        read_usage(path)
    assert (info.value.row, info.value.column) == (row, column)


@pytest.mark.parametrize("suffix", ["csv", "csv.gz"])
def test_empty_cells_and_quoted_commas_are_not_short_rows(tmp_path: Path, suffix: str) -> None:
    """`...,0.5,` has its memory field (empty: not measured); a quoted comma is no separator
    (the row is whole: what is refused is the name Kubernetes could not hold)."""
    path = tmp_path / f"usage.{suffix}"
    rows = ['2024-01-01T00:00:00Z,"a",p,"c",0.5,', "", '2024-01-01T00:05:00Z,"a",p,"c",0.25,']
    _write_csv(path, "\n".join([SHORT_HEADER, *rows]) + "\n")
    loaded = read_usage(path)
    assert loaded["cpu"].tolist() == [0.5, 0.25]
    assert loaded["memory"].isna().all()
    assert loaded["container"].tolist() == ["c", "c"]
    quoted = [row.replace('"c"', '"c,""x"""') for row in rows]
    _write_csv(path, "\n".join([SHORT_HEADER, *quoted]) + "\n")
    refused = """row 1, column 'container': 'c,"x"' is not a Kubernetes container name"""
    with pytest.raises(DataFormatError, match=refused):
        read_usage(path)


def test_a_header_only_events_file_still_means_no_events(tmp_path: Path) -> None:
    path = tmp_path / "events.csv"
    path.write_text("timestamp,namespace,pod,container,reason,memory\n")
    assert read_events(path).empty


@pytest.mark.parametrize(
    ("column", "values", "stored", "wanted"),
    [
        ("namespace", [1, 2, 3], "int64", "text"),
        ("pod", [True, False, True], "bool", "text"),
        ("memory", ["1", "2", "3"], "(large_)?string", "numbers"),
        ("cpu", [True, False, True], "bool", "numbers"),
        ("timestamp", ["2024-03-01T00:00:00Z"] * 3, "(large_)?string", "timestamps or UNIX"),
    ],
)
def test_parquet_columns_of_the_wrong_type_are_refused_not_converted(
    tmp_path: Path, column: str, values: list[object], stored: str, wanted: str
) -> None:
    frame = awkward_usage()
    frame[column] = pd.Series(values)
    frame.to_parquet(tmp_path / "typed.parquet")
    with pytest.raises(
        DataFormatError, match=rf"column '{column}': stored as {stored}, not {wanted}"
    ):
        read_usage(tmp_path / "typed.parquet")


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize(
    ("column", "name", "problem"),
    [
        (
            "pod",
            "p" * 2_000_000,
            r"'p{60}'\.\.\. \(2,000,000 characters\) is longer than a Kubernetes pod name",
        ),
        ("namespace", "n" * 64, r"'n{60}'\.\.\. \(64 characters\) is longer than a Kub"),
        ("container", "App", r"'App' is not a Kubernetes container name"),
        ("workload", "web_1", r"'web_1' is not a Kubernetes workload name"),
    ],
)
def test_names_kubernetes_cannot_hold_are_refused_with_their_row(
    tmp_path: Path, suffix: str, column: str, name: str, problem: str
) -> None:
    frame = awkward_usage()
    frame.loc[[0, 1], column] = name  # both samples of one series
    path = tmp_path / f"usage.{suffix}"
    (frame.to_parquet if suffix == "parquet" else frame.to_csv)(path, index=False)
    with pytest.raises(DataFormatError, match=rf"row 1, column '{column}': {problem}"):
        read_usage(path)


def test_special_files_are_named_as_what_they_are(tmp_path: Path) -> None:
    fifo = tmp_path / "usage.csv"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match=r"usage\.csv: a named pipe \(FIFO\), not a regular file"):
        read_usage(fifo)  # opening it would block for ever
    loop = tmp_path / "loop.csv"
    loop.symlink_to(tmp_path / "loop.csv")
    with pytest.raises(OSError, match=r"loop\.csv: a symbolic link loop, not a file"):
        read_usage(loop)
    dangling = tmp_path / "gone.parquet"
    dangling.symlink_to(tmp_path / "nowhere.parquet")
    with pytest.raises(FileNotFoundError, match=r"gone\.parquet: a broken symbolic link"):
        read_usage(dangling)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match=r"folder\.csv: is a directory"):
        read_usage(folder)
