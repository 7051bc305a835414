"""The next pass's fold without a second copy of the history: the new windows merged into
the float columns the cache already holds, in their own memory (pure).

At 10,000 containers x 8 days the usage frame's float columns are one 1.3 GB block. A
pass keeps all but the oldest window of each series and adds the few new ones, so the
joined history is about as long as the held one. Both parts are sorted by series and
time, and a series' kept old rows all come before its new ones (they end at the cut,
the new ones start there), so where each row lands is a merge of two sorted key
arrays: the runs of one series each are ordered by (series, old before new), not the
rows of the whole history. Each float column is rewritten in place in the block, run by
run: runs moving left are moved first to last, runs moving right last to first, so none
overwrites a run not yet moved. The block is allocated with spare rows
(`prometheus_usage.with_spare_rows`) so that a fleet a little larger than the last
pass's still fits. The caller must own the
block alone: the frame it handed out earlier is overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.columnar import is_columnar, run_rows, run_starts, shared_categories
from recommender.data.schema import KEY_LABELS, SERIES_COLUMNS
from recommender.data.timestamps import TIMESTAMP_DTYPE

CHECKED_ROWS = 1 << 20  # rows whose order is checked at once
MICROS = 1_000_000


def block_of(frame: pd.DataFrame, floats: list[str]) -> np.ndarray | None:
    """The 2-D array owning `frame`'s float columns when they are its rows, in order."""
    if not floats:
        return None
    first = frame[floats[0]].to_numpy()
    owner = first
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if owner.ndim != 2 or owner.shape[0] != len(floats) or owner.dtype != np.float64:
        return None
    if not owner.flags.c_contiguous:
        return None
    width = owner.strides[0]
    start = owner.__array_interface__["data"][0]
    for at, name in enumerate(floats):
        column = frame[name].to_numpy()
        if column.__array_interface__["data"][0] != start + at * width or column.strides != (8,):
            return None
    return owner


@dataclass(frozen=True)
class Runs:
    """A frame's rows as runs of one key each (rows first .. end - 1), sorted by time."""

    first: np.ndarray  # int64 row where each run starts
    end: np.ndarray  # int64 row after each run
    codes: dict[str, np.ndarray]  # each key label's code per run, in the shared names

    @classmethod
    def of(cls, frame: pd.DataFrame, keys: list[str], names: pd.CategoricalDtype) -> Runs:
        own = {name: frame[name].cat.codes.to_numpy() for name in keys}
        first = np.flatnonzero(run_starts(own.values(), len(frame)))
        end = np.append(first[1:], len(frame))
        return cls(
            first, end, {name: _recoded(frame[name], names, own[name][first]) for name in keys}
        )

    def kept(self, micros: np.ndarray, lowest: int, below: int) -> Runs:
        """Each run cut to its rows from `lowest` up to `below` (microseconds)."""
        first, end = self.first.copy(), self.end.copy()
        for run in range(first.size):
            rows = micros[first[run] : end[run]]
            first[run], end[run] = first[run] + rows.searchsorted([lowest, below])
        return Runs(first, end, self.codes)


@dataclass(frozen=True)
class Merge:
    """Where each run of the kept old rows and the kept new rows lands in the joined
    history: runs taken in `order` (old runs then new runs), laid end to end."""

    runs: tuple[Runs, Runs]
    order: np.ndarray  # int64 index into old runs + new runs
    at: np.ndarray  # int64 first joined row of each run in `order`
    size: int

    def _spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per run in `order`: its first row, its row count, whether it is new."""
        first = np.concatenate([self.runs[0].first, self.runs[1].first])[self.order]
        end = np.concatenate([self.runs[0].end, self.runs[1].end])[self.order]
        return first, end - first, self.order >= self.runs[0].first.size

    def placed(self, old: np.ndarray, new: np.ndarray, into: np.ndarray) -> np.ndarray:
        """The joined column from the old and new columns, written into `into` (memory
        apart from `old`'s)."""
        first, length, from_new = self._spans()
        for run in range(self.order.size):
            source = new if from_new[run] else old
            into[self.at[run] : self.at[run] + length[run]] = source[
                first[run] : first[run] + length[run]
            ]
        return into

    def moved(self, block: np.ndarray, new: list[np.ndarray]) -> None:
        """The joined columns written over the old ones in their own memory (`block`'s
        rows hold the old columns and room for the joined ones), with no copy of them:
        old runs keep their order, so those moving left are moved first to last and those
        moving right last to first, neither overwriting a run not yet moved, every column
        at once; then the new rows (`new`: a column each) go in between."""
        first, length, from_new = self._spans()
        old_runs = np.flatnonzero(~from_new)
        left = old_runs[self.at[old_runs] <= first[old_runs]]
        right = old_runs[self.at[old_runs] > first[old_runs]][::-1]
        for run in (*left, *right):
            block[:, self.at[run] : self.at[run] + length[run]] = block[
                :, first[run] : first[run] + length[run]
            ]
        runs = np.flatnonzero(from_new)
        places = run_rows(self.at[runs], length[runs])
        rows = run_rows(first[runs], length[runs])
        for at, column in enumerate(new):
            block[at, places] = column[rows]

    def repeated(self, name: str) -> np.ndarray:
        """A key's code on every joined row (one per run)."""
        codes = np.concatenate([self.runs[0].codes[name], self.runs[1].codes[name]])
        lengths = np.concatenate([r.end - r.first for r in self.runs])[self.order]
        narrow = codes.size == 0 or int(codes.max()) < 2**15  # pandas' own code width
        return np.repeat(codes[self.order].astype(np.int16 if narrow else np.int32), lengths)


def appended(
    old: pd.DataFrame,
    old_rows: tuple[int, int],
    new: pd.DataFrame,
    new_rows: tuple[int, int],
    block: np.ndarray,
    old_sorted: bool = False,
) -> pd.DataFrame | None:
    """The rows of `old` and `new` whose times fall in [from, below) of `old_rows` and
    `new_rows` (UNIX seconds), sorted by (namespace, pod, container, timestamp), old's
    before new's in a series, their float columns written into `block` (the owner of
    old's float columns). None when that cannot be done here: other columns, keys or
    times out of order, or more rows than the block holds (the caller then folds by
    copying). `old_sorted`: old's times are known to be in order within each series
    (a frame this returned is), so only new's are checked."""
    floats = [c for c in old.columns if old[c].dtype == np.float64]
    others = set(old.columns) - set(floats) - set(KEY_LABELS) - {"timestamp"}
    if (
        list(old.columns) != list(new.columns)
        or others
        or not all(name in old for name in SERIES_COLUMNS)
        or "timestamp" not in old
        or not (is_columnar(old) and is_columnar(new))
        or any(new[c].dtype != np.float64 for c in floats)
        or block_of(old, floats) is not block
    ):
        return None
    keys = [name for name in KEY_LABELS if name in old]
    names = _names(old, new, keys)
    if len(names.categories) ** 3 >= 2**62:
        return None
    old_times, new_times = _micros(old["timestamp"]), _micros(new["timestamp"])
    if not (
        (old_sorted or _times_sorted_in_runs(old, keys, old_times))
        and _times_sorted_in_runs(new, keys, new_times)
    ):
        return None
    runs = (
        Runs.of(old, keys, names).kept(old_times, *(t * MICROS for t in old_rows)),
        Runs.of(new, keys, names).kept(new_times, *(t * MICROS for t in new_rows)),
    )
    merge = _merge(runs, len(names.categories), (old_times, new_times))
    if merge is None or merge.size > block.shape[1]:
        return None
    stamps = merge.placed(old_times, new_times, np.empty(merge.size, np.int64))
    merge.moved(block, [new[name].to_numpy() for name in floats])  # old[name]: block[at]
    joined = pd.DataFrame(block[:, : merge.size].T, columns=floats, copy=False)
    for at, name in enumerate(old.columns):
        if name == "timestamp":
            values = pd.Series(
                pd.DatetimeIndex(stamps.view("datetime64[us]"), dtype=TIMESTAMP_DTYPE), copy=False
            )
        elif name in keys:
            codes = merge.repeated(name)
            values = pd.Series(pd.Categorical.from_codes(codes, dtype=names), copy=False)
        else:
            continue
        joined.insert(at, name, values)
    return joined


def _names(old: pd.DataFrame, new: pd.DataFrame, keys: list[str]) -> pd.CategoricalDtype:
    """Every key name of both reads, sorted (`shared_categories`): the held history's own
    names when they are one sorted set holding the new read's (a pass's usual case)."""
    held = old[keys[0]].dtype
    if (
        isinstance(held, pd.CategoricalDtype)
        and all(old[name].dtype == held for name in keys)
        and held.categories.is_monotonic_increasing
        and all(_within(new[name].cat.categories, held.categories) for name in keys)
    ):
        return held
    return shared_categories(frame[name] for frame in (old, new) for name in keys)


def _within(names: pd.Index, held: pd.Index) -> bool:
    """Whether every one of `names` is `held`: looked up in held's hash table, as
    `Index.isin` of text does not (0.35 s for 20,000 pod names, 0.005 s so)."""
    return bool((held.get_indexer(names) >= 0).all())


def _recoded(column: pd.Series, names: pd.CategoricalDtype, codes: np.ndarray) -> np.ndarray:
    """`codes` of the column's own categories as codes among `names` (a superset)."""
    recode = names.categories.get_indexer(column.cat.categories).astype(np.int32)
    return recode[codes]


def _micros(stamps: pd.Series) -> np.ndarray:
    """The timestamps as int64 microseconds (a view when they are in TIMESTAMP_DTYPE)."""
    return stamps.astype(TIMESTAMP_DTYPE).to_numpy(dtype="datetime64[us]").view(np.int64)


def _times_sorted_in_runs(frame: pd.DataFrame, keys: list[str], micros: np.ndarray) -> bool:
    """Times non-decreasing wherever the keys stay the same (checked in pieces)."""
    codes = [frame[name].cat.codes.to_numpy() for name in keys]
    for first in range(0, micros.size, CHECKED_ROWS):
        rows = slice(max(first - 1, 0), first + CHECKED_ROWS)
        back = np.diff(micros[rows]) < 0
        if back.any():
            same = np.ones(back.size, bool)
            for column in codes:
                same &= np.diff(column[rows]) == 0
            if (back & same).any():
                return False
    return True


def _merge(
    runs: tuple[Runs, Runs], size: int, times: tuple[np.ndarray, np.ndarray]
) -> Merge | None:
    """The runs of both parts by series key, old's before new's: None unless each part's
    runs are in series order, and a series' runs follow each other in time."""
    keys = []
    for part in runs:
        key = np.zeros(part.first.size, np.int64)
        for name in SERIES_COLUMNS:
            key *= size
            key += part.codes[name]
        keys.append(key)
    if any((np.diff(key) < 0).any() for key in keys):
        return None
    key = np.concatenate(keys)
    order = np.argsort(key, kind="stable")  # old runs before new ones of the same series
    lengths = np.concatenate([part.end - part.first for part in runs])[order]
    kept = lengths > 0
    order, lengths, key = order[kept], lengths[kept], key[order][kept]
    begins, ends = [], []
    for part, micros in zip(runs, times, strict=True):
        begins.append(
            micros[np.minimum(part.first, max(micros.size - 1, 0))] if micros.size else part.first
        )
        ends.append(micros[np.maximum(part.end - 1, 0)] if micros.size else part.end)
    begin, end = np.concatenate(begins)[order], np.concatenate(ends)[order]
    if ((key[1:] == key[:-1]) & (begin[1:] < end[:-1])).any():
        return None  # a series' run starts before the one before it ends
    at = np.zeros(order.size, np.int64)
    np.cumsum(lengths[:-1], out=at[1:])
    return Merge(runs, order, at, int(lengths.sum()))
