"""Turn the canonical usage (and events) tables into the arrays a replay steps through.

Documented treatment of awkward input:
- empty table, a single timestamp, unsorted or duplicate timestamps within a
  series, malformed values: `BacktestInputError` naming the problem (the table
  is checked by `validate_usage` first);
- gaps: windows without a sample stay NaN; strategies see NaN (no sample) and
  the metrics skip those windows;
- series shorter than the warm-up: replayed but never evaluated (counted in
  `ReplayHistory.unevaluated`); if no series outlives the warm-up, an error says
  how long the longest one is;
- events of no container in the usage table, or outside the container's own first and
  last sample, are ignored (counted; the latter apart, for the CLI's note);
- a recorded `OOMKilled` event means the container wanted more than the memory
  it was killed at: the window's peak becomes that memory plus one byte, so the
  window is an OOM again for any strategy whose limit is not above it. `Evicted`
  events raise the peak to the memory they name.

Requests in force before a strategy's first decision are the data's own
(`cpu_request` / `memory_request`, first value per series) or unset (NaN): unset
windows are left out of that strategy's metrics. The memory limit / request
ratio the admission step keeps is the data's (median of `memory_limit /
memory_request`, at least 1), else `ReplaySettings.default_memory_limit_ratio`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.backtest.settings import BacktestInputError, ReplaySettings, format_duration
from recommender.data.arrays import UsageArrays, from_long, most_common_gap, series_gaps
from recommender.data.schema import (
    SERIES_COLUMNS,
    DataFormatError,
    validate_events,
    validate_usage,
)
from recommender.data.throttling import with_cpu_demand
from recommender.data.timestamps import unix_seconds
from recommender.replay import Requests
from tailor.durations import DAY, HOUR

MAX_GRID_CELLS = 400_000_000  # containers x windows: beyond this the history is too sparse
EVENT_MATCH = SERIES_COLUMNS  # events and usage meet on the series key


@dataclass(frozen=True)
class ReplayHistory:
    """Everything a replay needs, as arrays over (containers, windows)."""

    usage: UsageArrays
    initial: Requests
    memory_limit_ratio: np.ndarray  # (n,)
    first_window: np.ndarray  # (n,) int64, first window with a sample
    last_window: np.ndarray  # (n,) int64, last window with a sample
    warm_up_windows: int
    ignored_events: int = 0
    events_outside: int = 0  # of those, events of a known container outside the windows

    @property
    def size(self) -> int:
        return self.usage.n_series

    @property
    def evaluation_start(self) -> np.ndarray:
        """First window of each container that counts in the metrics."""
        return self.first_window + self.warm_up_windows

    @property
    def evaluated(self) -> np.ndarray:
        """(n,) bool: containers with at least one sampled window after the warm-up."""
        return self.evaluated_windows() > 0

    @property
    def unevaluated(self) -> int:
        return int(self.size - self.evaluated.sum())

    def evaluated_windows(self) -> np.ndarray:
        """(n,) number of sampled windows after each container's warm-up."""
        sampled = ~(np.isnan(self.usage.cpu) & np.isnan(self.usage.memory))
        after = np.arange(self.usage.n_windows)[None, :] >= self.evaluation_start[:, None]
        return np.asarray((sampled & after).sum(axis=1), dtype=np.int64)

    def container_days(self) -> float:
        """Sampled container-days after the warm-up (independent of any strategy)."""
        return float(self.evaluated_windows().sum() * self.usage.step / DAY)


def prepare_history(
    usage: pd.DataFrame | UsageArrays,
    events: pd.DataFrame | None = None,
    settings: ReplaySettings | None = None,
) -> ReplayHistory:
    """Validate and grid the history; raise BacktestInputError on anything unusable."""
    settings = settings or ReplaySettings()
    if isinstance(usage, UsageArrays):
        arrays, frame = usage, None
    else:
        frame = _validated(usage)
        arrays = _grid(frame)
    first, last = _sample_span(arrays)
    arrays, ignored, outside = _fold_events(arrays, events, first, last)
    warm_up_windows = -(-settings.warm_up_seconds // arrays.step)
    _check_something_left(first, last, warm_up_windows, arrays.step, settings.warm_up_seconds)
    initial, ratio = _requests_and_ratio(frame, arrays, settings.default_memory_limit_ratio)
    return ReplayHistory(
        usage=arrays,
        initial=initial,
        memory_limit_ratio=ratio,
        first_window=first,
        last_window=last,
        warm_up_windows=int(warm_up_windows),
        ignored_events=ignored,
        events_outside=outside,
    )


def _validated(frame: pd.DataFrame) -> pd.DataFrame:
    if frame is None or len(frame) == 0:
        raise BacktestInputError("usage history is empty: nothing to replay")
    try:
        # the replay's truth is what containers wanted: throttled CPU included
        return with_cpu_demand(validate_usage(frame, "usage"))
    except DataFormatError as error:
        raise BacktestInputError(str(error)) from error


def _grid(frame: pd.DataFrame) -> UsageArrays:
    seconds = unix_seconds(frame["timestamp"])
    if np.unique(seconds).size < 2:
        raise BacktestInputError(
            "usage history has a single timestamp: a replay needs at least two windows"
        )
    codes = frame.groupby(list(EVENT_MATCH), sort=False).ngroup().to_numpy(np.int64)
    owners, gaps = series_gaps(seconds, codes)  # within a series: out of phase is no finer
    step = most_common_gap(gaps)
    _check_one_period(frame, codes, owners, gaps, step)
    windows = (int(seconds.max()) - int(seconds.min())) // step + 1
    series = int(codes.max()) + 1
    if series * windows > MAX_GRID_CELLS:
        raise BacktestInputError(
            f"history of {series} series spans {windows} windows of {step} s: too large "
            "or too sparse for one grid; split it by time or resample it"
        )
    return from_long(frame, step)


def _check_one_period(
    frame: pd.DataFrame, codes: np.ndarray, owners: np.ndarray, gaps: np.ndarray, step: int
) -> None:
    """Refuse series sampled at another period than the grid's: on a finer grid most of
    their windows would be gaps, and every sum of theirs a fraction of the truth.
    (`owners`, `gaps`: `series_gaps` of the series `codes`.)"""
    counts = pd.DataFrame({"series": owners, "gap": gaps}).value_counts().reset_index(name="count")
    modal = counts.sort_values(["series", "count"], ascending=[True, False])
    modal = modal.drop_duplicates("series")
    odd = modal[(modal["gap"] != step) & (modal["count"] >= 2)]
    if odd.empty:
        return
    first = odd.iloc[0]
    row = frame.iloc[int(np.flatnonzero(codes == first["series"])[0])]
    name = "/".join(str(row[column]) for column in EVENT_MATCH)
    raise BacktestInputError(
        f"{len(odd)} series are sampled at another period than the rest ({step} s), e.g. "
        f"{name} every {int(first['gap'])} s: a replay needs one sample period; resample them"
    )


def _sample_span(arrays: UsageArrays) -> tuple[np.ndarray, np.ndarray]:
    sampled = ~(np.isnan(arrays.cpu) & np.isnan(arrays.memory))
    if not sampled.any():
        raise BacktestInputError("usage history has no samples")
    has_any = sampled.any(axis=1)
    first = np.where(has_any, sampled.argmax(axis=1), arrays.n_windows)
    last = np.where(has_any, arrays.n_windows - 1 - sampled[:, ::-1].argmax(axis=1), -1)
    return first.astype(np.int64), last.astype(np.int64)


class WarmUpError(BacktestInputError):
    """A warm-up no series outlives; carries both spans so a caller can name the flag
    the warm-up came from (a default one follows `--split` or the dataset)."""

    def __init__(self, warm_up_seconds: int, longest_seconds: int) -> None:
        self.warm_up_seconds = warm_up_seconds
        self.longest_seconds = longest_seconds
        super().__init__(
            f"a warm-up of {format_duration(warm_up_seconds)} leaves no window to evaluate: "
            f"{self.longest_text}; choose a shorter warm-up (e.g. --warm-up 6h)"
        )

    @property
    def longest_text(self) -> str:
        return f"the longest series spans {self.longest_seconds / HOUR:.1f} h"


def _check_something_left(
    first: np.ndarray, last: np.ndarray, warm_up_windows: int, step: int, warm_up: int
) -> None:
    if np.any(last >= first + warm_up_windows):
        return
    raise WarmUpError(warm_up, int((last - first + 1).max()) * step)


def _first_per_series(frame: pd.DataFrame, arrays: UsageArrays, column: str) -> np.ndarray:
    """The first non-NaN value of `column` per series of `arrays`, NaN where none."""
    values = np.full(arrays.n_series, np.nan)
    if column not in frame:
        return values
    present = frame.loc[frame[column].notna(), [*arrays.keys.columns, column]]
    if present.empty:
        return values
    firsts = present.groupby(list(arrays.keys.columns), sort=False)[column].first()
    index = pd.MultiIndex.from_frame(arrays.keys)
    return firsts.reindex(index).to_numpy(dtype=np.float64, na_value=np.nan, copy=True)


def _median_ratio(frame: pd.DataFrame, arrays: UsageArrays) -> np.ndarray:
    ratio = np.full(arrays.n_series, np.nan)
    if "memory_limit" not in frame or "memory_request" not in frame:
        return ratio
    both = frame["memory_limit"].notna() & (frame["memory_request"] > 0)
    if not both.any():
        return ratio
    rows = frame.loc[both, list(arrays.keys.columns)]
    rows = rows.assign(ratio=frame.loc[both, "memory_limit"] / frame.loc[both, "memory_request"])
    medians = rows.groupby(list(arrays.keys.columns), sort=False)["ratio"].median()
    index = pd.MultiIndex.from_frame(arrays.keys)
    return medians.reindex(index).to_numpy(dtype=np.float64, na_value=np.nan, copy=True)


def _requests_and_ratio(
    frame: pd.DataFrame | None, arrays: UsageArrays, default_ratio: float
) -> tuple[Requests, np.ndarray]:
    n = arrays.n_series
    if frame is None:
        return Requests.unset(n), np.full(n, default_ratio)
    cpu = _first_per_series(frame, arrays, "cpu_request")
    memory = _first_per_series(frame, arrays, "memory_request")
    memory[memory <= 0] = np.nan
    cpu[cpu <= 0] = np.nan
    ratio = _median_ratio(frame, arrays)
    ratio = np.where(np.isnan(ratio), default_ratio, np.maximum(ratio, 1.0))
    return Requests(cpu, memory, memory * ratio), ratio


def _fold_events(
    arrays: UsageArrays, events: pd.DataFrame | None, first: np.ndarray, last: np.ndarray
) -> tuple[UsageArrays, int, int]:
    """Raise window peaks to the memory the events show was wanted; the events ignored,
    and how many of them belong to a known container but fall outside its own samples
    (`first`..`last` window): folded in, one would lengthen the container's life."""
    if events is None or len(events) == 0:
        return arrays, 0, 0
    try:
        events = validate_events(events, "events")
    except DataFormatError as error:
        raise BacktestInputError(str(error)) from error
    index = pd.MultiIndex.from_frame(arrays.keys.loc[:, list(EVENT_MATCH)])
    rows = index.get_indexer(pd.MultiIndex.from_frame(events.loc[:, list(EVENT_MATCH)]))
    seconds = unix_seconds(events["timestamp"])
    cols = (seconds - arrays.start) // arrays.step
    owner = np.where(rows >= 0, rows, 0)
    known = (rows >= 0) & (cols >= first[owner]) & (cols <= last[owner])
    wanted = events["memory"].to_numpy(dtype=np.float64)
    wanted = wanted + (events["reason"] == "OOMKilled").to_numpy()  # killed: wanted more
    peaks = arrays.memory.copy()
    np.fmax.at(peaks, (rows[known], cols[known]), wanted[known])  # fmax: NaN never wins
    folded = UsageArrays(arrays.keys, arrays.start, arrays.step, arrays.cpu, peaks)
    return folded, int((~known).sum()), int(((rows >= 0) & ~known).sum())
