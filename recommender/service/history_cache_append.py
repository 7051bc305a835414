"""The next pass's fold without a second copy of the history: the new windows merged into
the float columns the cache already holds, in their own memory (pure).

At 10,000 containers x 8 days the usage frame's float columns are one 1.3 GB block. A
pass keeps all but the oldest window of each series and adds the few new ones, so the
joined history is about as long as the held one. Both parts are sorted by series and
time, and a series' kept old rows all come before its new ones (they end at the cut,
the new ones start there), so where each row lands is a merge of two sorted key
arrays (`searchsorted`), not a sort of the whole history. Each float column is then
taken out of the block (one column's copy), and the block's row rewritten in place
with the joined column; the block is allocated with spare rows
(`prometheus_usage.with_spare_rows`) so
that a fleet a little larger than the last pass's still fits. The caller must own the
block alone: the frame it handed out earlier is overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.columnar import is_columnar, shared_categories
from recommender.data.schema import KEY_LABELS
from recommender.data.timestamps import TIMESTAMP_DTYPE

SERIES = ("namespace", "pod", "container")
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
class Merge:
    """Where the kept old rows and the kept new rows land in the joined history."""

    old_rows: np.ndarray
    old_at: np.ndarray
    new_rows: np.ndarray
    new_at: np.ndarray

    @property
    def size(self) -> int:
        return int(self.old_at.size + self.new_at.size)

    def placed(self, old: np.ndarray, new: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
        joined = np.empty(self.size, dtype or old.dtype)
        joined[self.old_at] = old[self.old_rows]
        joined[self.new_at] = new[self.new_rows]
        return joined


def appended(
    old: pd.DataFrame,
    old_rows: np.ndarray,
    new: pd.DataFrame,
    new_rows: np.ndarray,
    block: np.ndarray,
) -> pd.DataFrame | None:
    """The kept rows of `old` and `new` sorted by (namespace, pod, container, timestamp),
    old's before new's in a series, their float columns written into `block` (the owner
    of old's float columns). None when that cannot be done here: other columns, keys out
    of order, or more rows than the block holds (the caller then folds by copying)."""
    floats = [c for c in old.columns if old[c].dtype == np.float64]
    others = set(old.columns) - set(floats) - set(KEY_LABELS) - {"timestamp"}
    if (
        list(old.columns) != list(new.columns)
        or others
        or not all(name in old for name in SERIES)
        or "timestamp" not in old
        or not (is_columnar(old) and is_columnar(new))
        or any(new[c].dtype != np.float64 for c in floats)
        or old_rows.size + new_rows.size > block.shape[1]
        or block_of(old, floats) is not block
    ):
        return None
    keys = [name for name in KEY_LABELS if name in old]
    names = shared_categories(frame[name] for frame in (old, new) for name in keys)
    if len(names.categories) ** 3 >= 2**62:
        return None
    old_codes = {name: _codes(old[name], names) for name in keys}
    new_codes = {name: _codes(new[name], names) for name in keys}
    old_times, new_times = _micros(old["timestamp"]), _micros(new["timestamp"])
    merge = _merge(old_codes, old_times, old_rows, new_codes, new_times, new_rows, names)
    if merge is None:
        return None
    stamps = merge.placed(old_times, new_times)
    del old_times, new_times
    return _written(old, new, block, floats, merge, names, (old_codes, new_codes), stamps)


def _written(
    old: pd.DataFrame,
    new: pd.DataFrame,
    block: np.ndarray,
    floats: list[str],
    merge: Merge,
    names: pd.CategoricalDtype,
    codes_of: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
    stamps: np.ndarray,
) -> pd.DataFrame:
    size = merge.size
    old_codes, new_codes = codes_of
    for at, name in enumerate(floats):
        kept = old[name].to_numpy()[merge.old_rows]  # out of the block before it is rewritten
        column = block[at, :size]
        column[merge.old_at] = kept
        del kept
        column[merge.new_at] = new[name].to_numpy()[merge.new_rows]
    joined = pd.DataFrame(block[:, :size].T, columns=floats, copy=False)
    for at, name in enumerate(old.columns):
        if name in floats:
            continue
        if name == "timestamp":
            values = pd.Series(
                pd.DatetimeIndex(stamps.view("datetime64[us]")).tz_localize("UTC"), copy=False
            ).astype(TIMESTAMP_DTYPE)
        else:
            codes = merge.placed(old_codes.pop(name), new_codes.pop(name))
            values = pd.Series(pd.Categorical.from_codes(codes, dtype=names), copy=False)
        joined.insert(at, name, values)
    return joined


def _codes(column: pd.Series, names: pd.CategoricalDtype) -> np.ndarray:
    """The column's codes among `names` (a superset of its own), as int32."""
    codes = column.cat.codes.to_numpy()
    if column.cat.categories.equals(names.categories):
        return codes.astype(np.int32, copy=False)
    recode = names.categories.get_indexer(column.cat.categories).astype(np.int32)
    return recode[codes]


def _micros(stamps: pd.Series) -> np.ndarray:
    """The timestamps as int64 microseconds (a view when they are in TIMESTAMP_DTYPE)."""
    return stamps.astype(TIMESTAMP_DTYPE).to_numpy(dtype="datetime64[us]").view(np.int64)


def _merge(
    old_codes: dict[str, np.ndarray],
    old_times: np.ndarray,
    old_rows: np.ndarray,
    new_codes: dict[str, np.ndarray],
    new_times: np.ndarray,
    new_rows: np.ndarray,
    names: pd.CategoricalDtype,
) -> Merge | None:
    """Each part's rows in series order, merged: None unless each part is sorted by
    series key then time, and every kept old row of a series is before its new ones."""
    size = max(len(names.categories), 1)
    old_key = _series_key(old_codes, old_rows, size)
    new_key = _series_key(new_codes, new_rows, size)
    if not (_in_order(old_key, old_times[old_rows]) and _in_order(new_key, new_times[new_rows])):
        return None
    new_at = np.arange(new_key.size) + np.searchsorted(old_key, new_key, side="right")
    # a series' last kept old row is before its first new row in time
    first_new = np.flatnonzero(np.r_[True, np.diff(new_key) != 0]) if new_key.size else new_key
    before = np.searchsorted(old_key, new_key[first_new], side="right") - 1
    shared = (before >= 0) & (old_key[np.maximum(before, 0)] == new_key[first_new])
    last_old = old_times[old_rows[before[shared]]]
    if (last_old > new_times[new_rows[first_new[shared]]]).any():
        return None
    old_at = np.searchsorted(new_key, old_key, side="left")
    old_at += np.arange(old_key.size)
    return Merge(old_rows, old_at, new_rows, new_at)


def _series_key(codes: dict[str, np.ndarray], rows: np.ndarray, size: int) -> np.ndarray:
    key = np.zeros(rows.size, np.int64)
    for name in SERIES:
        key *= size
        key += codes[name][rows]
    return key


def _in_order(key: np.ndarray, times: np.ndarray) -> bool:
    """Keys non-decreasing, and times non-decreasing within a key (checked in pieces)."""
    for first in range(0, key.size, CHECKED_ROWS):
        rows = slice(max(first - 1, 0), first + CHECKED_ROWS)
        step_key, step_time = np.diff(key[rows]), np.diff(times[rows])
        if (step_key < 0).any() or ((step_key == 0) & (step_time < 0)).any():
            return False
    return True
