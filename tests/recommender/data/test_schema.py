"""Validation of the canonical usage and event tables: every error names file, row, column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recommender.data.files import read_events, read_usage
from recommender.data.schema import (
    TIMESTAMP_DTYPE,
    USAGE_COLUMNS,
    DataFormatError,
    empty_events,
    validate_events,
    validate_usage,
)

HEADER = "timestamp,namespace,pod,container,cpu,memory"
GOOD_ROWS = [
    "2024-01-01T00:00:00Z,shop,web-1,app,0.5,1000",
    "2024-01-01T00:05:00Z,shop,web-1,app,0.25,2000",
    "2024-01-01T00:00:00Z,shop,web-2,app,0.75,3000",
]


def write_csv(folder: Path, lines: list[str], name: str = "usage.csv") -> Path:
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return path


def usage_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp": ["2024-01-01T00:00:00Z", "2024-01-01T00:05:00Z", "2024-01-01T00:00:00Z"],
            "namespace": ["shop", "shop", "shop"],
            "pod": ["web-1", "web-1", "web-2"],
            "container": ["app", "app", "app"],
            "cpu": [0.5, 0.25, 0.75],
            "memory": [1000.0, 2000.0, 3000.0],
        }
    )


def expect_error(path: Path, row: int | None, column: str | None, fragment: str) -> DataFormatError:
    with pytest.raises(DataFormatError) as caught:
        read_usage(path)
    error = caught.value
    assert (error.row, error.column) == (row, column)
    message = str(error)
    assert message.startswith(f"{path}: ")
    if row is not None:
        assert f"row {row}" in message
    if column is not None:
        assert f"column '{column}'" in message
    assert fragment in message
    return error


def test_negative_value_message_names_file_row_and_column(tmp_path: Path) -> None:
    rows = [f"{60 * i},ns,p,c,0.1,100" for i in range(20)]
    rows[16] = "960,ns,p,c,-0.5,100"  # the 17th data row
    path = write_csv(tmp_path, [HEADER, *rows])
    with pytest.raises(DataFormatError) as caught:
        read_usage(path)
    message = f"{path}: row 17, column 'cpu': negative value -0.5 (file line 18)"
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_the_file_line_counts_the_blank_lines_pandas_skips(tmp_path: Path) -> None:
    """A data row is not a line: an editor needs the line, blank ones included."""
    rows = ["0,ns,p,c,0.1,100", "", '60,ns,"p",c,0.1,100', "", "120,ns,p,c,-1,100"]
    path = write_csv(tmp_path, [HEADER, *rows])
    with pytest.raises(DataFormatError) as caught:
        read_usage(path)
    assert (caught.value.row, caught.value.line) == (3, 6)
    assert str(caught.value).endswith("negative value -1 (file line 6)")


@pytest.mark.parametrize(
    ("bad_row", "row", "column", "fragment"),
    [
        ("2024-01-01T00:10:00Z,shop,web-1,app,abc,1000", 3, "cpu", "not a number: 'abc'"),
        ("2024-01-01T00:10:00Z,shop,web-1,app,,1000", 3, "cpu", "missing value"),
        ("2024-01-01T00:10:00Z,shop,web-1,app,inf,1000", 3, "cpu", "infinite value"),
        ("2024-01-01T00:10:00Z,shop,web-1,app,0.1,-5", 3, "memory", "negative value -5"),
        ("2024-01-01T00:10:00Z,shop,,app,0.1,1000", 3, "pod", "missing value"),
        ("2024-01-01T00:10:00Z,,web-1,app,0.1,1000", 3, "namespace", "missing value"),
        ("yesterday,shop,web-1,app,0.1,1000", 3, "timestamp", "unparsable timestamp 'yesterday'"),
        (",shop,web-1,app,0.1,1000", 3, "timestamp", "missing timestamp"),
        ("2024-01-01T00:05:00Z,shop,web-1,app,0.1,1000", 3, "timestamp", "duplicate timestamp"),
        ("2023-12-31T23:55:00Z,shop,web-1,app,0.1,1000", 3, "timestamp", "earlier than row 2"),
        ("2024-01-01T00:10:00Z,shop,web-1,app,1e300,1000", 3, "cpu", "1e+300 cores is more"),
        ("2024-01-01T00:10:00Z,shop,web-1,app,0.1,1e19", 3, "memory", "1e+19 bytes is more"),
    ],
)
def test_bad_cell_is_located(
    tmp_path: Path, bad_row: str, row: int, column: str, fragment: str
) -> None:
    path = write_csv(tmp_path, [HEADER, *GOOD_ROWS[:2], bad_row, GOOD_ROWS[2]])
    expect_error(path, row, column, fragment)


def test_first_bad_row_of_a_column_is_reported(tmp_path: Path) -> None:
    bad = ["2024-01-01T00:10:00Z,shop,web-1,app,-1,5", "2024-01-01T00:15:00Z,shop,a,b,-2,5"]
    expect_error(write_csv(tmp_path, [HEADER, *GOOD_ROWS, *bad]), 4, "cpu", "negative value -1")


def test_missing_and_unknown_columns(tmp_path: Path) -> None:
    no_cpu = [line.rsplit(",", 2)[0] + "," + line.rsplit(",", 1)[1] for line in GOOD_ROWS]
    path = write_csv(tmp_path, ["timestamp,namespace,pod,container,memory", *no_cpu])
    expect_error(path, None, "cpu", "missing required column")
    extra = [f"{line},1" for line in GOOD_ROWS]
    path = write_csv(tmp_path, [f"{HEADER},cpus", *extra])
    expect_error(path, None, "cpus", "unknown column")


def test_empty_file_and_header_only(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataFormatError, match=r"empty\.csv: empty file"):
        read_usage(empty)
    expect_error(write_csv(tmp_path, [HEADER]), None, None, "no data rows")


def test_series_may_interleave_and_share_timestamps(tmp_path: Path) -> None:
    lines = [HEADER, GOOD_ROWS[0], GOOD_ROWS[2], GOOD_ROWS[1]]
    usage = read_usage(write_csv(tmp_path, lines))
    assert usage["pod"].tolist() == ["web-1", "web-1", "web-2"]
    assert usage["cpu"].tolist() == [0.5, 0.25, 0.75]


def test_whole_series_without_memory_is_cpu_only(tmp_path: Path) -> None:
    lines = [HEADER, *GOOD_ROWS[:2], "2024-01-01T00:00:00Z,shop,web-2,app,0.75,"]
    usage = read_usage(write_csv(tmp_path, lines))
    assert np.isnan(usage["memory"].iloc[2])
    assert usage["memory"].iloc[:2].tolist() == [1000.0, 2000.0]


def test_key_text_is_never_mistaken_for_missing(tmp_path: Path) -> None:
    lines = [HEADER, "1704067200,nan,null,007,0.5,1"]  # names Kubernetes allows
    usage = read_usage(write_csv(tmp_path, lines))
    assert usage[["namespace", "pod", "container"]].iloc[0].tolist() == ["nan", "null", "007"]


def test_timestamp_forms_all_become_utc(tmp_path: Path) -> None:
    lines = [
        HEADER,
        "1704067200,ns,a,c,1,1",  # UNIX seconds
        "2024-01-01T01:05:00+01:00,ns,a,c,1,1",  # offset: converted to UTC
        "1704067500.5,ns,a,c,1,1",  # fractional seconds
        "2024-01-01 00:10:00,ns,a,c,1,1",  # no offset: taken as UTC
    ]
    usage = read_usage(write_csv(tmp_path, lines))
    assert str(usage["timestamp"].dtype) == TIMESTAMP_DTYPE
    assert usage["timestamp"].tolist() == [
        pd.Timestamp("2024-01-01T00:00:00Z"),
        pd.Timestamp("2024-01-01T00:05:00Z"),
        pd.Timestamp("2024-01-01T00:05:00.5Z"),
        pd.Timestamp("2024-01-01T00:10:00Z"),
    ]


def test_unsupported_suffix_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text("{}")
    with pytest.raises(DataFormatError, match=r"usage\.json: unsupported file type"):
        read_usage(path)


def test_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.csv"):
        read_usage(tmp_path / "nope.csv")


def test_frame_is_normalised_without_touching_the_input() -> None:
    frame = usage_frame().iloc[[2, 0, 1]]  # series out of order, each series in order
    before = frame.copy()
    usage = validate_usage(frame)
    pd.testing.assert_frame_equal(frame, before)
    assert list(usage.columns) == list(USAGE_COLUMNS[:7])
    assert usage["workload"].tolist() == usage["pod"].tolist() == ["web-1", "web-1", "web-2"]
    assert usage.index.tolist() == [0, 1, 2]
    assert usage["cpu"].dtype == np.float64 and usage["memory"].dtype == np.float64
    assert str(usage["pod"].dtype) == "str"


def test_in_memory_frame_errors_name_the_source() -> None:
    frame = usage_frame()
    frame.loc[1, "cpu"] = -0.5
    with pytest.raises(DataFormatError, match=r"^<frame>: row 2, column 'cpu': negative value"):
        validate_usage(frame)
    with pytest.raises(DataFormatError, match=r"^collector: row 2, column 'cpu'"):
        validate_usage(frame, source="collector")


def test_in_memory_frame_types() -> None:
    frame = usage_frame()
    frame["timestamp"] = pd.to_datetime(frame["timestamp"]).dt.tz_convert("Europe/Paris")
    assert validate_usage(frame)["timestamp"].iloc[0] == pd.Timestamp("2024-01-01T00:00Z")
    frame["cpu"] = [True, False, True]
    with pytest.raises(DataFormatError, match="column 'cpu': booleans are not numbers"):
        validate_usage(frame)
    with pytest.raises(TypeError):
        validate_usage([1, 2, 3])  # type: ignore[arg-type]


def test_workload_must_be_constant_within_a_series() -> None:
    frame = usage_frame().assign(workload=["web", "other", "web"])
    with pytest.raises(DataFormatError, match=r"row 2, column 'workload': workload differs"):
        validate_usage(frame)


def test_optional_resource_columns_allow_not_set_but_not_negative() -> None:
    frame = usage_frame().assign(cpu_request=[1.0, np.nan, 2.0], memory_limit=[5.0, 5.0, 5.0])
    usage = validate_usage(frame)
    assert usage["cpu_request"].isna().tolist() == [False, True, False]
    frame["memory_limit"] = [5.0, 5.0, -1.0]
    with pytest.raises(DataFormatError, match=r"row 3, column 'memory_limit': negative value -1"):
        validate_usage(frame)


def test_duplicate_column_is_rejected() -> None:
    frame = pd.concat([usage_frame(), usage_frame()[["cpu"]]], axis=1)
    with pytest.raises(DataFormatError, match="column 'cpu': column appears twice"):
        validate_usage(frame)


EVENT_HEADER = "timestamp,namespace,pod,container,reason,memory"


def test_events_validate_and_sort(tmp_path: Path) -> None:
    lines = [
        EVENT_HEADER,
        "2024-01-02T00:00:00Z,shop,web-1,app,Evicted,500",
        "2024-01-01T00:00:00Z,shop,web-1,app,OOMKilled,1073741824",
    ]
    events = read_events(write_csv(tmp_path, lines, "events.csv"))
    assert events["reason"].tolist() == ["OOMKilled", "Evicted"]
    assert events["workload"].tolist() == ["web-1", "web-1"]
    assert events["memory"].tolist() == [1073741824.0, 500.0]


@pytest.mark.parametrize(
    ("bad_row", "column", "fragment"),
    [
        ("2024-01-01T00:00:00Z,shop,web-1,app,Crashed,5", "reason", "unknown event reason"),
        ("2024-01-01T00:00:00Z,shop,web-1,app,OOMKilled,", "memory", "missing value"),
        ("2024-01-01T00:00:00Z,shop,web-1,app,oomkilled,5", "reason", "'oomkilled'"),
        ("2024-01-01T00:05:00Z,shop,web-1,app,OOMKilled,7", "timestamp", "duplicate event"),
        ("2024-01-01T00:00:00Z,shop,web-1,app,OOMKilled,1e300", "memory", "than a Kubernetes"),
    ],
)
def test_bad_event_is_located(tmp_path: Path, bad_row: str, column: str, fragment: str) -> None:
    lines = [EVENT_HEADER, "2024-01-01T00:05:00Z,shop,web-1,app,OOMKilled,5", bad_row]
    path = write_csv(tmp_path, lines, "events.csv")
    with pytest.raises(DataFormatError) as caught:
        read_events(path)
    assert str(caught.value).startswith(f"{path}: row 2, column '{column}': ")
    assert fragment in str(caught.value)


def test_header_only_events_file_is_no_events(tmp_path: Path) -> None:
    events = read_events(write_csv(tmp_path, [EVENT_HEADER], "events.csv"))
    assert events.empty
    pd.testing.assert_frame_equal(events, empty_events())
    assert validate_events(empty_events()).empty


def test_error_survives_pickling() -> None:
    import pickle

    error = DataFormatError("usage.csv", "negative value -1", row=3, column="cpu")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.row, copy.column) == (str(error), 3, "cpu")


def test_memory_may_be_unmeasured_in_single_samples(tmp_path: Path) -> None:
    """An empty memory cell means "not measured then", not zero: kept as NaN, never dropped."""
    path = write_csv(
        tmp_path, [HEADER, *GOOD_ROWS[:2], "2024-01-01T00:10:00Z,shop,web-1,app,0.1,", GOOD_ROWS[2]]
    )
    frame = read_usage(path)
    assert len(frame) == 4
    assert frame["memory"].isna().sum() == 1
    assert frame["cpu"].notna().all()


def test_complex_numbers_are_refused() -> None:
    """Their imaginary part used to be dropped without a word."""
    frame = usage_frame()
    frame["cpu"] = frame["cpu"].astype(complex) + 1j
    with pytest.raises(DataFormatError, match="column 'cpu': complex numbers are not accepted"):
        validate_usage(frame)
    frame["cpu"] = pd.Series([0.5, 0.25 + 2j, 0.75], dtype=object)
    with pytest.raises(DataFormatError, match="column 'cpu': complex numbers are not accepted"):
        validate_usage(frame)


def test_resource_columns_are_held_to_what_kubernetes_can_express() -> None:
    """A value no quantity can hold overflowed the models to inf; the largest one still loads."""
    frame = usage_frame().assign(cpu=[0.5, 9.2e15, 0.75], memory_limit=[5.0, 5.0, 9.2e18])
    assert validate_usage(frame)["cpu"].max() == 9.2e15
    frame["memory_limit"] = [5.0, 1e20, 5.0]
    with pytest.raises(DataFormatError, match=r"row 2, column 'memory_limit': 1e\+20 bytes"):
        validate_usage(frame)


@pytest.mark.parametrize(
    ("stamp", "fragment"),
    [
        ("300000000000", "UNIX seconds 300000000000 out of range"),  # year 11476
        ("1704067200000", "UNIX milliseconds? timestamps in seconds are expected"),
        ("-1", "UNIX seconds -1 out of range"),
        ("9999-12-28T00:00:00Z", "9999-12-28T00:00:00Z is out of range"),
        ("2200-01-01T00:00:00Z", "from 1970-01-01 on and before 2200-01-01"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z is out of range"),  # was dropped
        ("1969-12-31T23:59:59Z", "1969-12-31T23:59:59Z is out of range"),
    ],
)
def test_timestamps_outside_1970_to_2200_are_refused(
    tmp_path: Path, stamp: str, fragment: str
) -> None:
    """They passed validation and crashed the models' time arithmetic with a traceback."""
    path = write_csv(tmp_path, [HEADER, "1704067200,ns,a,c,1,1", f"{stamp},ns,b,c,1,1"])
    error = expect_error(path, 2, "timestamp", fragment)
    in_range_in_milliseconds = stamp in ("300000000000", "1704067200000")
    assert ("milliseconds" in str(error)) == in_range_in_milliseconds


def test_the_edges_of_the_timestamp_range_are_accepted(tmp_path: Path) -> None:
    lines = [HEADER, "0,ns,a,c,1,1", "2199-12-31T23:59:59.999Z,ns,a,c,1,1"]
    assert len(read_usage(write_csv(tmp_path, lines))) == 2


def test_timestamps_out_of_range_are_refused_in_every_form() -> None:
    """Datetimes and numbers (Parquet columns) and the events table go the same way."""
    frame = usage_frame()
    frame["timestamp"] = pd.to_datetime(["2024-01-01", "9999-01-01", "2024-01-01"], utc=True)
    with pytest.raises(DataFormatError, match="row 2, column 'timestamp': 9999-01-01T00"):
        validate_usage(frame)
    frame["timestamp"] = [1704067200, 1704067500, 1704067200000]
    with pytest.raises(DataFormatError, match=r"row 3, .*\(UNIX milliseconds\?"):
        validate_usage(frame)
    events = pd.DataFrame(
        {
            "timestamp": [1704067200000],
            "namespace": ["shop"],
            "pod": ["web-1"],
            "container": ["app"],
            "reason": ["OOMKilled"],
            "memory": [1e9],
        }
    )
    with pytest.raises(DataFormatError, match="UNIX milliseconds"):
        validate_events(events)


@pytest.mark.parametrize("column", ["namespace", "workload", "pod", "container"])
@pytest.mark.parametrize("name", ["shop ", " shop", "sh op", "shop\t"])
def test_a_key_with_whitespace_is_refused(column: str, name: str) -> None:
    """ "shop " silently made a second series beside "shop"; no Kubernetes name holds a space."""
    frame = usage_frame().assign(workload="web")
    frame.loc[1, column] = name
    with pytest.raises(DataFormatError) as caught:
        validate_usage(frame)
    assert (caught.value.row, caught.value.column) == (2, column)
    assert f"whitespace in {name!r}" in str(caught.value)


@pytest.mark.parametrize(
    "values",
    [
        pd.to_timedelta([1, 2, 3], unit="s"),
        pd.to_datetime([1, 2, 3], unit="s", utc=True),
        pd.to_datetime([1, 2, 3], unit="s"),
        pd.period_range("2024-01", periods=3, freq="M"),
    ],
)
def test_durations_and_dates_are_not_numbers(values: pd.Index) -> None:
    """pandas turns them into nanoseconds: a Parquet duration column read as a billion cores."""
    frame = usage_frame().assign(cpu=values)
    with pytest.raises(DataFormatError, match="row 1, column 'cpu': not a number"):
        validate_usage(frame)


def test_a_parquet_duration_column_is_not_a_number(tmp_path: Path) -> None:
    path = tmp_path / "usage.parquet"
    frame = usage_frame().assign(timestamp=lambda f: pd.to_datetime(f["timestamp"], utc=True))
    frame.assign(memory=pd.to_timedelta([1, 2, 3], unit="s")).to_parquet(path)
    expect_error(path, None, "memory", "not numbers (Parquet columns are not converted)")


def test_a_directory_is_not_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "usage.csv").mkdir()
    with pytest.raises(IsADirectoryError, match=r"usage\.csv: is a directory"):
        read_usage(tmp_path / "usage.csv")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        read_events(tmp_path / "usage.csv")
