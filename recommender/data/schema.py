"""The canonical usage-history and event tables, and their validation.

Every source (files, Prometheus, the trace loaders, the demo fleet) speaks one
long format, one row per sample, so the models never care where data came
from. Validation is strict and vectorised: bad input raises `DataFormatError`
naming the source, the 1-based data row and the column; nothing is ever
silently dropped or repaired. A series is identified by (namespace, pod,
container); `workload` is a label that defaults to the pod name.

Missing measurements: `cpu` is never NaN. `memory` NaN means "not measured in
that sample" (a whole CPU-only series such as the Azure trace, or single
unreported samples); models skip it, they never read it as zero. Requests and
limits are optional and NaN means "not set". `cpu_throttled` (optional) is the
CPU the container was held back from by its CPU limit, in cores, on top of `cpu`
(see `throttling`); NaN means "not measured".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import pandas as pd

from recommender.data.errors import DataFormatError, fail_at
from recommender.data.timestamps import TIMESTAMP_DTYPE, parse_timestamps
from tailor.memory_pressure import MEMORY_PRESSURE
from tailor.quantity import INT64_MAX

SERIES_COLUMNS = ("namespace", "pod", "container")
USAGE_REQUIRED = ("timestamp", "namespace", "pod", "container", "cpu", "memory")
RESOURCE_COLUMNS = ("cpu_request", "memory_request", "cpu_limit", "memory_limit")
THROTTLED_COLUMN = "cpu_throttled"
USAGE_COLUMNS = (
    "timestamp",
    "namespace",
    "workload",
    "pod",
    "container",
    "cpu",
    "memory",
    *RESOURCE_COLUMNS,
    THROTTLED_COLUMN,
)
EVENT_REASONS = ("OOMKilled", "Evicted", MEMORY_PRESSURE)
EVENT_REQUIRED = ("timestamp", "namespace", "pod", "container", "reason", "memory")
EVENT_COLUMNS = ("timestamp", "namespace", "workload", "pod", "container", "reason", "memory")
KEY_LABELS = ("namespace", "workload", "pod", "container")
TEXT_COLUMNS = (*KEY_LABELS, "reason")
STRING_DTYPE = pd.StringDtype(na_value=np.nan)
# Above these no Kubernetes quantity can be set (int64 millicores, int64 bytes): such a
# value is a unit mistake or corruption, and it overflowed the models to inf (a JSON crash).
CEILINGS: Final = {"cpu": (INT64_MAX / 1000, "cores"), "memory": (float(INT64_MAX), "bytes")}


def _check_columns(
    frame: pd.DataFrame, required: Sequence[str], allowed: Sequence[str], source: str
) -> None:
    names = [str(name) for name in frame.columns]
    duplicated = [name for name in names if names.count(name) > 1]
    if duplicated:
        raise DataFormatError(source, "column appears twice", column=duplicated[0])
    for name in required:
        if name not in names:
            raise DataFormatError(
                source, f"missing required column (required: {', '.join(required)})", column=name
            )
    for name in names:
        if name not in allowed:
            raise DataFormatError(
                source, f"unknown column (allowed: {', '.join(allowed)})", column=name
            )


def _text(values: pd.Series, column: str, source: str) -> pd.Series:
    """A key or label column as non-empty strings; a key holds no whitespace, since a
    Kubernetes name cannot, and "shop " silently made a second series beside "shop"."""
    fail_at(source, column, values.isna().to_numpy(), "missing value")
    text = values.astype(STRING_DTYPE)
    fail_at(source, column, (text.str.strip() == "").to_numpy(), "empty value")
    if column in KEY_LABELS:
        fail_at(
            source,
            column,
            text.str.contains(r"\s", regex=True).to_numpy(dtype=bool),
            lambda i: f"whitespace in {text.iloc[i]!r} (Kubernetes names cannot hold it)",
        )
    return text.reset_index(drop=True)


def _is_time_like(dtype: object) -> bool:
    """Durations, dates and periods: pandas turns them into numbers (nanoseconds), which
    read a Parquet duration column as a billion cores."""
    kind = getattr(dtype, "kind", "")
    return kind in ("m", "M") or isinstance(dtype, (pd.PeriodDtype, pd.IntervalDtype))


def numeric_values(
    values: pd.Series, column: str, source: str, ceiling: tuple[float, str] | None = None
) -> np.ndarray:
    """A numeric column as float64 (NaN kept), rejecting text, booleans, durations and
    dates, complex numbers, infinities, negatives and values above `ceiling` (limit, unit).

    Public so that loaders of raw traces report bad cells the same way.
    """
    if pd.api.types.is_bool_dtype(values):
        raise DataFormatError(source, "booleans are not numbers", row=1, column=column)
    if _is_time_like(values.dtype):
        present = np.flatnonzero(values.notna().to_numpy())
        first = int(present[0]) if present.size else 0
        raise DataFormatError(
            source,
            f"not a number: {values.iloc[first]!r} (a {values.dtype} column)",
            row=first + 1,
            column=column,
        )
    if not pd.api.types.is_numeric_dtype(values):
        coerced = pd.to_numeric(values, errors="coerce")
        not_numbers = (coerced.isna() & values.notna()).to_numpy()
        fail_at(source, column, not_numbers, lambda i: f"not a number: {values.iloc[i]!r}")
        values = coerced
    if pd.api.types.is_complex_dtype(values):
        raise DataFormatError(source, "complex numbers are not accepted", row=1, column=column)
    numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
    fail_at(source, column, np.isinf(numbers), "infinite value")
    fail_at(source, column, numbers < 0, lambda i: f"negative value {numbers[i]:g}")
    if ceiling is not None:
        limit, unit = ceiling
        fail_at(
            source,
            column,
            numbers > limit,
            lambda i: (
                f"{numbers[i]:g} {unit} is more than a Kubernetes quantity holds ({limit:.3g})"
            ),
        )
    return numbers


def _measure(frame: pd.DataFrame, column: str, source: str) -> np.ndarray:
    """A cpu_* or memory_* column, held to what Kubernetes can express."""
    return numeric_values(frame[column], column, source, CEILINGS[column.split("_")[0]])


def _group_codes(columns: Sequence[pd.Series]) -> np.ndarray:
    """Dense int64 codes of the combined columns, ordered like a lexicographic sort."""
    codes = np.zeros(len(columns[0]), dtype=np.int64)
    for values in columns:
        part, uniques = pd.factorize(values, sort=True)
        codes, _ = pd.factorize(codes * len(uniques) + part, sort=True)
    return codes.astype(np.int64)


def _check_series_order(series: np.ndarray, micros: np.ndarray, source: str) -> None:
    """Timestamps strictly increase within each series, in input order."""
    order = np.argsort(series, kind="stable")
    same = series[order][1:] == series[order][:-1]
    gap = np.diff(micros[order])
    later_rows = order[1:]
    earlier_rows = order[:-1]
    bad = same & (gap <= 0)
    if not bad.any():
        return
    first = np.flatnonzero(bad)[np.argmin(later_rows[bad])]
    row, previous = int(later_rows[first]) + 1, int(earlier_rows[first]) + 1
    if gap[first] == 0:
        problem = f"duplicate timestamp in its series (same as row {previous})"
    else:
        problem = f"timestamp earlier than row {previous} of the same series (unsorted)"
    raise DataFormatError(source, problem, row=row, column="timestamp")


def _check_one_workload(series: np.ndarray, workload: pd.Series, source: str) -> None:
    """A pod belongs to one workload: every row of a series carries the same label."""
    codes, _ = pd.factorize(workload)
    _, first_rows = np.unique(series, return_index=True)
    first_workload = np.empty(series.max() + 1, dtype=np.int64)
    first_workload[series[first_rows]] = codes[first_rows]
    fail_at(
        source,
        "workload",
        codes != first_workload[series],
        "workload differs from earlier rows of the same (namespace, pod, container)",
    )


def _labels(frame: pd.DataFrame, source: str) -> dict[str, pd.Series]:
    labels = {name: _text(frame[name], name, source) for name in SERIES_COLUMNS}
    labels["workload"] = (
        _text(frame["workload"], "workload", source) if "workload" in frame else labels["pod"]
    )
    return labels


def _sorted_frame(columns: dict[str, object], labels: dict[str, pd.Series]) -> pd.DataFrame:
    """Rows ordered by namespace, workload, pod, container, then timestamp."""
    result = pd.DataFrame(columns)
    series = _group_codes([labels[name] for name in KEY_LABELS])
    micros = result["timestamp"].astype("int64").to_numpy()
    order = np.lexsort((micros, series))
    return result.take(order).reset_index(drop=True)


def validate_usage(frame: pd.DataFrame, source: str = "<frame>") -> pd.DataFrame:
    """Check a usage table and return a normalised copy.

    The copy has tz-aware UTC timestamps, string keys, float64 numbers, a filled
    `workload` (the pod name when absent) and rows sorted by series then time.
    Raises DataFormatError for the first bad row of the first failing check
    (columns, keys, timestamps, numbers, then rules across rows of a series).
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{source}: expected a pandas DataFrame, got {type(frame).__name__}")
    _check_columns(frame, USAGE_REQUIRED, USAGE_COLUMNS, source)
    if frame.empty:
        raise DataFormatError(source, "no data rows")
    labels = _labels(frame, source)
    timestamps = parse_timestamps(frame["timestamp"], source)
    numbers = {
        name: _measure(frame, name, source)
        for name in ("cpu", "memory", *RESOURCE_COLUMNS, THROTTLED_COLUMN)
        if name in frame
    }
    fail_at(source, "cpu", np.isnan(numbers["cpu"]), "missing value")
    series = _group_codes([labels[name] for name in SERIES_COLUMNS])
    _check_one_workload(series, labels["workload"], source)
    _check_series_order(series, timestamps.astype("int64").to_numpy(), source)
    columns: dict[str, object] = {"timestamp": timestamps}
    columns.update({name: labels[name] for name in KEY_LABELS})
    columns.update(numbers)
    return _sorted_frame(columns, labels)


def validate_events(frame: pd.DataFrame, source: str = "<frame>") -> pd.DataFrame:
    """Check an events table (OOM kills, evictions) and return a normalised copy.

    Zero rows are valid (nothing happened). Order does not matter, but one
    container cannot have the same event twice at the same instant.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{source}: expected a pandas DataFrame, got {type(frame).__name__}")
    _check_columns(frame, EVENT_REQUIRED, EVENT_COLUMNS, source)
    if frame.empty:
        return empty_events()
    labels = _labels(frame, source)
    timestamps = parse_timestamps(frame["timestamp"], source)
    reason = _text(frame["reason"], "reason", source)
    fail_at(
        source,
        "reason",
        ~reason.isin(EVENT_REASONS).to_numpy(),
        lambda i: f"unknown event reason {reason.iloc[i]!r} (expected {', '.join(EVENT_REASONS)})",
    )
    memory = _measure(frame, "memory", source)
    fail_at(source, "memory", np.isnan(memory), "missing value")
    series = _group_codes([labels[name] for name in SERIES_COLUMNS])
    _check_one_workload(series, labels["workload"], source)
    event_key = _group_codes([pd.Series(series), reason])
    _check_no_duplicate_events(event_key, timestamps.astype("int64").to_numpy(), source)
    columns: dict[str, object] = {"timestamp": timestamps}
    columns.update({name: labels[name] for name in KEY_LABELS})
    columns.update({"reason": reason, "memory": memory})
    return _sorted_frame(columns, labels)


def _check_no_duplicate_events(key: np.ndarray, micros: np.ndarray, source: str) -> None:
    """Events may come in any order, but not twice for one key and instant."""
    order = np.lexsort((np.arange(key.size), micros, key))
    same = (key[order][1:] == key[order][:-1]) & (micros[order][1:] == micros[order][:-1])
    if same.any():
        pairs = np.flatnonzero(same)
        later = np.maximum(order[pairs], order[pairs + 1])
        first = int(np.argmin(later))
        row = int(later[first]) + 1
        previous = int(min(order[pairs[first]], order[pairs[first] + 1])) + 1
        raise DataFormatError(
            source,
            f"duplicate event: same container, reason and timestamp as row {previous}",
            row=row,
            column="timestamp",
        )


def empty_events() -> pd.DataFrame:
    """A zero-row events table with the normalised dtypes."""
    columns: dict[str, pd.Series] = {
        "timestamp": pd.Series([], dtype=TIMESTAMP_DTYPE),
    }
    for name in (*KEY_LABELS, "reason"):
        columns[name] = pd.Series([], dtype=STRING_DTYPE)
    columns["memory"] = pd.Series([], dtype=np.float64)
    return pd.DataFrame(columns)
