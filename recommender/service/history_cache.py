"""The recommender service's Prometheus history, read in full once and then only what is new.

A pass re-reading `--history` (8 days) every minute asks Prometheus for the same
days again and again: on a cluster of thousands of containers that is most of a
pass, and most of Prometheus's query load. The cache keeps the last pass's frames
and reads from a little before their end: the last `overlap` windows are read
again (a scrape that arrived late can still change them) with as many windows of
context before them, so every window and event from the cut on comes out as a
full read would give it. Anything else that changes the read (the namespaces
served, the settings) means a full read, and so does a cut that falls before the
range start (a pass after a long pause).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from recommender.data.columnar import run_starts
from recommender.data.prometheus import (
    EmptyHistoryError,
    PrometheusSettings,
    load_prometheus_history,
)
from recommender.data.timestamps import LATEST_SECONDS, unix_seconds
from recommender.service.history_cache_append import appended, block_of
from recommender.service.history_cache_fold import fold

Loader = Callable[..., tuple[pd.DataFrame, pd.DataFrame]]
SERIES = ["namespace", "pod", "container"]


def _stamp(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _one_workload(usage: pd.DataFrame) -> pd.DataFrame:
    """A series' workload is its controller's wherever one read knew it: a read whose range
    held no owner sample for the pod falls back to the pod's name. Only the series with
    such rows are looked at (none, usually: a pass folding in a few windows looked up
    every row of the eight days, most of the pass at thousands of containers)."""
    if usage.empty or _none_odd(usage):
        return usage
    key = _series_key(usage)
    if key is None or usage["workload"].dtype != usage["pod"].dtype or (np.diff(key) < 0).any():
        return _named_after_controller(usage)
    workload_codes = usage["workload"].cat.codes.to_numpy()
    # rows named after their pod, and series whose workload changes (the last one wins)
    odd = workload_codes == usage["pod"].cat.codes.to_numpy()
    odd[1:] |= (np.diff(key) == 0) & (np.diff(workload_codes) != 0)
    if not odd.any():
        return usage
    involved = np.flatnonzero(np.isin(key, np.unique(key[odd])))
    fixed = _named_after_controller(usage.iloc[involved])["workload"]
    codes = workload_codes.copy()
    codes[involved] = fixed.cat.codes.to_numpy()
    dtype = usage["workload"].dtype
    assert isinstance(dtype, pd.CategoricalDtype)  # checked by _series_key's caller above
    return usage.assign(workload=pd.Categorical.from_codes(codes, dtype=dtype))


def _none_odd(usage: pd.DataFrame) -> bool:
    """True when the rows are sorted by series and no series has a row named after its
    pod or changes its workload: the check below, on each run of one key instead of on
    each row (a series' workload only changes where such a run ends)."""
    dtype = usage["pod"].dtype
    if not isinstance(dtype, pd.CategoricalDtype) or any(
        usage[name].dtype != dtype for name in ("workload", *SERIES)
    ):
        return False
    codes = {name: usage[name].cat.codes.to_numpy() for name in ("workload", *SERIES)}
    starts = np.flatnonzero(run_starts(codes.values(), len(usage)))
    size = max(len(dtype.categories), 1)
    if size**3 >= 2**62:
        return False
    key = np.zeros(starts.size, np.int64)
    for name in SERIES:
        key = key * size + codes[name][starts]
    workload = codes["workload"][starts]
    steps = np.diff(key)
    return not (
        (steps < 0).any()
        or (workload == codes["pod"][starts]).any()
        or ((steps == 0) & (np.diff(workload) != 0)).any()
    )


def _named_after_controller(usage: pd.DataFrame) -> pd.DataFrame:
    named = usage[usage["workload"] != usage["pod"]]
    known = named.groupby(SERIES, sort=False, observed=True)["workload"].last()
    keys = pd.MultiIndex.from_frame(usage[SERIES])
    found = known.reindex(keys).to_numpy()
    workload = np.where(pd.isna(found), usage["pod"].to_numpy(dtype=object), found)
    return usage.assign(workload=pd.Series(workload, dtype=usage["workload"].dtype))


def _series_key(frame: pd.DataFrame) -> np.ndarray | None:
    """One int64 per row naming its (namespace, pod, container), in the order of the names
    (the shared categories are sorted); None unless the keys share one categorical type."""
    dtype = frame[SERIES[0]].dtype
    if not isinstance(dtype, pd.CategoricalDtype) or any(frame[c].dtype != dtype for c in SERIES):
        return None
    size = max(len(dtype.categories), 1)
    if size**3 >= 2**62:
        return None
    key = np.zeros(len(frame), np.int64)
    for name in SERIES:
        key = key * size + frame[name].cat.codes.to_numpy(np.int64)
    return key


@dataclass
class HistoryCache:
    """Frames of the last read, and what they were read for."""

    overlap: int = 4  # windows read again at the end of the cached range
    loader: Loader = load_prometheus_history
    progress: Callable[[int, int], None] | None = None
    full_reads: int = 0
    partial_reads: int = 0
    _key: str | None = field(default=None, repr=False)
    _usage: pd.DataFrame | None = field(default=None, repr=False)
    _events: pd.DataFrame | None = field(default=None, repr=False)
    _end: int = 0
    _block: np.ndarray | None = field(default=None, repr=False)  # the usage's floats
    _block_refs: int = 0
    in_place_folds: int = 0
    _in_order: bool = field(default=False, repr=False)  # held usage: times checked in order

    def load(
        self, settings: PrometheusSettings, now: datetime | None = None
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(usage, events) of `settings`' range ending `now`, as `load_prometheus_history`
        reads them (EmptyHistoryError likewise)."""
        start, end = settings.resolve_range(now)
        step = settings.step_seconds
        key = settings.model_copy(update={"start": None, "end": None}).model_dump_json()
        cut = self._end - self.overlap * step
        if key != self._key or self._usage is None or cut <= start or end < self._end:
            return self._full(settings, key, now, end)
        self.partial_reads += 1
        recent = settings.model_copy(
            update={"start": _stamp(cut - self.overlap * step), "end": _stamp(end)}
        )
        new_usage: pd.DataFrame | None
        new_events: pd.DataFrame | None
        try:
            new_usage, new_events = self.loader(recent, self.progress, now=now)
        except EmptyHistoryError:  # every pod gone since: what was read stays in range
            new_usage = new_events = None
        events = self._joined(self._events, new_events, start, cut)
        block, self._key = self._owned_block(), None  # no half-written history kept
        usage = _one_workload(self._joined(self._usage, new_usage, start, cut, block))
        self._usage = self._block = None
        del new_usage, block
        if usage.empty:
            raise EmptyHistoryError(f"no usage left in the history range of {settings.url}")
        return self._keep(key, end, usage, events)

    def _full(
        self, settings: PrometheusSettings, key: str, now: datetime | None, end: int
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        self.full_reads += 1
        self._key, self._in_order = None, False  # a failed read leaves nothing to build on
        usage, events = self.loader(settings, self.progress, now=now)
        return self._keep(key, end, usage, events)

    def _keep(
        self, key: str, end: int, usage: pd.DataFrame, events: pd.DataFrame
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The read's frames, and the float block the next fold may write into: the
        references to it counted now are the held frame's own."""
        self._key, self._end, self._usage, self._events = key, end, usage, events
        self._block = block_of(usage, [c for c in usage.columns if usage[c].dtype == np.float64])
        self._block_refs = sys.getrefcount(self._block)
        return usage, events

    def _owned_block(self) -> np.ndarray | None:
        """The held usage's float block when no one else holds the frame or any view of
        it (the caller let go of what the last load returned): the fold may rewrite it.
        A caller still holding it gets a fold into new memory instead."""
        if self._block is None or sys.getrefcount(self._usage) > 2:
            return None
        return self._block if sys.getrefcount(self._block) <= self._block_refs else None

    def _joined(
        self,
        old: pd.DataFrame | None,
        new: pd.DataFrame | None,
        start: int,
        cut: int,
        block: np.ndarray | None = None,
    ) -> pd.DataFrame:
        """Old rows from the range start to the cut, new rows from the cut on; written
        into `block` (the old frame's float columns) when it is given and they fit."""
        if block is not None and old is not None and new is not None:
            window = (start, cut)
            joined = appended(old, window, new, (cut, LATEST_SECONDS), block, self._in_order)
            if joined is not None:
                self.in_place_folds += 1
                self._in_order = True  # a frame `appended` returns is in order
                return joined
        parts = []
        if old is not None and not old.empty:
            seconds = unix_seconds(old["timestamp"])
            parts.append((old, np.flatnonzero((seconds >= start) & (seconds < cut))))
            del seconds
        if new is not None and not new.empty:
            parts.append((new, np.flatnonzero(unix_seconds(new["timestamp"]) >= cut)))
        if not parts:
            return (old if old is not None else new).iloc[0:0]  # type: ignore[union-attr]
        return fold(parts)
