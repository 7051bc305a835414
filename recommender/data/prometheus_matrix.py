"""A query_range answer (a matrix) as arrays: the series' labels, then every point's time
and value in two float64 arrays, without a Python object per point.

A JSON library builds a list, a float and a string for every point: at 10,000
containers a day of 5-minute points is 2.9 million of each per query, and building
and then converting them took most of a load (orjson, the fastest at hand, took 4-5x
this module's CPU on a day of 1,000 containers' working sets, 288,000 points).
Prometheus writes a matrix in one fixed layout
(`{"status":"success","data":{"resultType":"matrix","result":[` then
`{"metric":{...},"values":[[t,"v"],...]}` per series), so the labels are cut out and
parsed as JSON (one small document per series) while the points of all series, which
hold nothing but numbers, are parsed in one call for the whole answer. The cut is
safe: inside a JSON string every `"` is escaped, so `,"values":[` and `]]}` cannot
occur within a label value. The points become CSV lines (`,t,v`) that pyarrow's
reader parses (exactly: shortest round-trip text in, the same float64 out). Any other
layout (another server, a proxy, a future field) returns None, and the caller parses
the answer with the standard library instead, with the checks that name what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from recommender.data.prometheus_settings import PrometheusSourceError

PREFIX = b'{"status":"success","data":{"resultType":"matrix","result":['
SERIES_START = b'{"metric":'
VALUES_START = b',"values":['
SERIES_END = b"]]}"
_POINT_COLUMNS = {"time": pa.float64(), "value": pa.float64()}
_COLUMNS = ["before", "time", "value"]  # `before`: empty, the `,` a line starts with
_LINES = bytes.maketrans(b"]", b"\n")


@dataclass(frozen=True)
class Matrix:
    """Series i has labels `labels[i]` and points `times[offsets[i]:offsets[i + 1]]`."""

    labels: list[dict[str, str]]
    offsets: np.ndarray  # int64, len(labels) + 1
    times: np.ndarray  # int64 UNIX seconds (grid points are whole), or ms for raw samples
    values: np.ndarray  # float64

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)


def empty_matrix() -> Matrix:
    return Matrix([], np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0))


def decode_matrix(body: bytes, unit: int = 1) -> Matrix | None:
    """The matrix of a Prometheus query_range answer (or of an instant query of a range
    selector), its times in 1/`unit` seconds; None when `body` is not laid out as
    Prometheus lays it out (the caller then parses it as generic JSON)."""
    if not body.startswith(PREFIX):
        return None
    labels_at: list[tuple[int, int]] = []
    points_at: list[tuple[int, int]] = []
    at = len(PREFIX)
    while body.startswith(SERIES_START, at):
        labels_end = body.find(VALUES_START, at)
        points_end = body.find(SERIES_END, labels_end)
        if labels_end < 0 or points_end < 0:
            return None
        labels_at.append((at + len(SERIES_START), labels_end))
        points_at.append((labels_end + len(VALUES_START) + 1, points_end))
        at = points_end + len(SERIES_END)
        if body.startswith(b",", at):
            at += 1
    if not body.startswith(b"]", at):
        return None
    if not points_at:
        return empty_matrix()
    view = memoryview(body)
    # a series' points are `t,"v"],[t,"v"],...,[t,"v"` here: one `[` fewer than points
    counts = np.fromiter((body.count(b"[", *span) + 1 for span in points_at), np.int64)
    times, values = _points(b"],[".join([view[first:last] for first, last in points_at]))
    if times is None or values is None or times.size != int(counts.sum()):
        return None
    try:
        labels = json.loads(b"[" + b",".join([view[a:b] for a, b in labels_at]) + b"]")
    except ValueError:
        return None
    if not all(isinstance(value, str) for metric in labels for value in metric.values()):
        return None
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Matrix(labels, offsets, np.rint(times * unit).astype(np.int64), values)


def _points(text: bytes) -> tuple[np.ndarray | None, np.ndarray | None]:
    """`t,"v"],[t,"v"],...` -> (times, values); (None, None) if anything is not a number
    or a point is not a [time, value] pair.

    One pass of `bytes.translate` turns the points into CSV lines `,t,v` (each `]` a
    line end, `[` and `"` dropped; the empty first column makes every line, the first
    included, three columns, so a point of any other shape fails the read), which
    pyarrow's reader parses on one thread (its thread pool only added CPU here)."""
    lines = (b"," + text).translate(_LINES, b'["')
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(lines),
            read_options=pa_csv.ReadOptions(column_names=_COLUMNS, use_threads=False),
            parse_options=pa_csv.ParseOptions(quote_char=False, double_quote=False),
            convert_options=pa_csv.ConvertOptions(
                column_types=_POINT_COLUMNS, null_values=[], include_columns=_COLUMNS[1:]
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None, None
    if table.column("time").null_count or table.column("value").null_count:
        return None, None
    return table.column("time").to_numpy(), table.column("value").to_numpy()


def matrix_from_result(result: list[dict], unit: int = 1) -> Matrix:
    """The generic path: a result already parsed as JSON (`_is_series` items), checked,
    its times in 1/`unit` seconds."""
    labels: list[dict[str, str]] = []
    times: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for series in result:
        try:
            points = np.asarray(series["values"], dtype=object).reshape(-1, 2)
            stamps = np.rint(points[:, 0].astype(np.float64) * unit).astype(np.int64)
            numbers = points[:, 1].astype(np.float64)  # Prometheus spells NaN and +Inf
        except (ValueError, TypeError) as error:
            raise PrometheusSourceError(
                f"a series of {series.get('metric')!r} is not a list of [time, value] pairs "
                f"({error})"
            ) from None
        labels.append(series["metric"])
        times.append(stamps)
        values.append(numbers)
    if not labels:
        return empty_matrix()
    counts = np.array([len(t) for t in times], np.int64)
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Matrix(labels, offsets, np.concatenate(times), np.concatenate(values))
