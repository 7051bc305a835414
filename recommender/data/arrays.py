"""Wide, array-shaped usage: the form the vectorised models and backtests work on.

The canonical long format (one row per sample) is what files and sources speak;
models want a (series x windows) matrix so one numpy operation covers every
container. `UsageArrays` is that matrix plus the keys naming each row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.columnar import run_starts
from recommender.data.timestamps import unix_seconds

KEY_COLUMNS = ("namespace", "workload", "pod", "container")
# What a VPA recommends for: the pods of a workload merge into one container aggregate.
AGGREGATE_COLUMNS = ("namespace", "workload", "container")


@dataclass(frozen=True)
class UsageArrays:
    """Usage on a regular time grid.

    keys:   one row per series with the columns of KEY_COLUMNS (str).
    start:  UNIX seconds of window 0; window j covers [start + j*step, start + (j+1)*step).
    step:   seconds per window.
    cpu:    float64 (series, windows): average cores over the window, NaN = no sample.
    memory: float64 (series, windows): peak bytes over the window, NaN = no sample.
    """

    keys: pd.DataFrame
    start: int
    step: int
    cpu: np.ndarray
    memory: np.ndarray

    def __post_init__(self) -> None:
        if self.cpu.shape != self.memory.shape or self.cpu.ndim != 2:
            raise ValueError("cpu and memory must be 2-D arrays of the same shape")
        if len(self.keys) != self.cpu.shape[0]:
            raise ValueError("keys must have one row per series")
        if self.step <= 0:
            raise ValueError("step must be positive")

    @property
    def n_series(self) -> int:
        return int(self.cpu.shape[0])

    @property
    def n_windows(self) -> int:
        return int(self.cpu.shape[1])

    @property
    def times(self) -> np.ndarray:
        """UNIX seconds of each window's start, int64."""
        return self.start + self.step * np.arange(self.n_windows, dtype=np.int64)

    def select(self, rows: np.ndarray | slice) -> UsageArrays:
        """A subset of series (a block for parallel work), same time grid."""
        keys = self.keys.iloc[rows].reset_index(drop=True)
        return UsageArrays(keys, self.start, self.step, self.cpu[rows], self.memory[rows])

    def to_long(self) -> pd.DataFrame:
        """Back to the canonical long format, dropping windows with no sample."""
        n, t = self.cpu.shape
        row = np.repeat(np.arange(n), t)
        col = np.tile(np.arange(t), n)
        cpu = self.cpu.ravel()
        mem = self.memory.ravel()
        keep = ~(np.isnan(cpu) & np.isnan(mem))
        frame = self.keys.iloc[row[keep]].reset_index(drop=True)
        frame.insert(0, "timestamp", pd.to_datetime(self.times[col[keep]], unit="s", utc=True))
        frame["cpu"] = cpu[keep]
        frame["memory"] = mem[keep]
        return frame


class SamplePeriodError(ValueError):
    """The history holds no two samples of one series: the grid's step is unknown."""


def series_gaps(
    timestamps: np.ndarray, series: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Positive gaps between consecutive samples of each series (one code per timestamp in
    `series`; one series when None): (the series of each gap, the gap in seconds)."""
    timestamps = np.asarray(timestamps)
    if series is None:
        series = np.zeros(timestamps.shape, dtype=np.int64)
    order = np.lexsort((timestamps, series))
    ordered = series[order]
    same = ordered[1:] == ordered[:-1]
    diffs = np.diff(timestamps[order])
    kept = same & (diffs > 0)
    return ordered[1:][kept], diffs[kept]


def most_common_gap(gaps: np.ndarray) -> int:
    """The sample period `series_gaps` shows: its most common gap."""
    if gaps.size == 0:
        raise SamplePeriodError("need at least two distinct timestamps to infer the sample period")
    values, counts = np.unique(gaps, return_counts=True)
    return int(values[np.argmax(counts)])


def infer_step(timestamps: np.ndarray, series: np.ndarray | None = None) -> int:
    """The most common positive gap between consecutive samples of a series, in seconds.

    With `series` (one code per timestamp), gaps are taken within each series only:
    series sampled at the same rate but out of phase must not make a finer step.
    """
    return most_common_gap(series_gaps(timestamps, series)[1])


def factorize_rows(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Number each distinct key combination in first-seen order.

    Returns the int64 code of every row and the distinct keys (as str), one row per
    code. groupby codes, not MultiIndex.factorize: that builds a Python tuple per
    row, which dominates on millions of rows (docs/results/implementation-choices.md).
    """
    chosen = frame.loc[:, list(columns)]
    if all(isinstance(chosen[c].dtype, pd.CategoricalDtype) for c in columns):
        # columnar history: group the integer codes, turn only the distinct keys to text
        key_codes = {c: chosen[c].cat.codes.to_numpy() for c in columns}
        runs = _runs_of_distinct_keys(list(key_codes.values()))
        if runs is not None:  # rows grouped by key, as histories are: no hashing per row
            codes, first_rows = runs
            return codes, chosen.iloc[first_rows].astype(str).reset_index(drop=True)
        keys_frame = pd.DataFrame(key_codes)
    else:
        keys_frame = chosen.astype(str)
    grouped = keys_frame.groupby(list(columns), sort=False, dropna=False)
    codes = grouped.ngroup().to_numpy(np.int64)
    _, first_rows = np.unique(codes, return_index=True)  # first_rows[c]: first row of code c
    keys = chosen.iloc[first_rows].astype(str).reset_index(drop=True)
    return codes, keys


def _runs_of_distinct_keys(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """(code per row, first row per code) when every key's rows are one run: the
    runs in order are then the keys in first-seen order, as `factorize_rows` numbers
    them; None when a key comes back after another (pandas then groups them)."""
    rows = columns[0].size
    if rows == 0:
        return None
    change = run_starts(columns, rows)
    first_rows = np.flatnonzero(change)
    starts = pd.DataFrame({at: codes[first_rows] for at, codes in enumerate(columns)})
    if starts.duplicated().any():
        return None
    codes = np.cumsum(change, dtype=np.int64)
    codes -= 1
    return codes, first_rows


def from_long(frame: pd.DataFrame, step: int | None = None) -> UsageArrays:
    """Pivot a validated canonical long frame onto a regular grid.

    Samples are snapped down to their window; when two samples of a series fall in
    one window, CPU is averaged and memory takes the maximum (a peak stays a peak).
    """
    if frame.empty:
        raise ValueError("usage history is empty")
    seconds = unix_seconds(frame["timestamp"])
    codes, keys = factorize_rows(frame, KEY_COLUMNS)
    if step is None:
        step = infer_step(seconds, codes)
    start = int(seconds.min() // step * step)
    col = (seconds - start) // step
    n_windows = int(col.max()) + 1
    n = len(keys)
    flat = codes.astype(np.int64) * n_windows + col
    size = n * n_windows
    cpu_values = frame["cpu"].to_numpy(dtype=np.float64)
    mem_values = frame["memory"].to_numpy(dtype=np.float64)
    cpu_ok = ~np.isnan(cpu_values)
    cpu_sum = np.bincount(flat[cpu_ok], weights=cpu_values[cpu_ok], minlength=size)
    cpu_count = np.bincount(flat[cpu_ok], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        cpu = np.where(cpu_count > 0, cpu_sum / np.maximum(cpu_count, 1), np.nan)
    memory = np.full(size, -np.inf)
    mem_ok = ~np.isnan(mem_values)
    np.maximum.at(memory, flat[mem_ok], mem_values[mem_ok])
    memory[np.isneginf(memory)] = np.nan
    return UsageArrays(
        keys=keys,
        start=start,
        step=int(step),
        cpu=cpu.reshape(n, n_windows),
        memory=memory.reshape(n, n_windows),
    )
