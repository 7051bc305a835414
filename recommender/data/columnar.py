"""History held columnar: the key columns (namespace, workload, pod, container) as
categoricals sharing one set of names, so a row costs a small integer per key instead
of a reference to a string, and columns compare with each other (workload == pod).

Frames of different loads have different names; `concat_frames` joins them over the
union (pandas would fall back to strings for categoricals that differ).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from recommender.data.schema import KEY_LABELS


def shared_categories(columns: Iterable[pd.Series | np.ndarray]) -> pd.CategoricalDtype:
    """One categorical type holding every name of `columns`, sorted (so sorting by codes
    sorts by name). The key columns of one read share a type: its names are taken once."""
    names: set[str] = set()
    seen: set[int] = set()
    for column in columns:
        dtype = getattr(column, "dtype", None)
        if isinstance(dtype, pd.CategoricalDtype):
            if id(dtype) not in seen:
                seen.add(id(dtype))
                names.update(dtype.categories)
        else:
            names.update(pd.unique(np.asarray(column, dtype=object)))
    return pd.CategoricalDtype(sorted(names))


def run_starts(columns: Iterable[np.ndarray], rows: int) -> np.ndarray:
    """True on each row where a run of equal values in every one of `columns` begins."""
    change = np.zeros(rows, bool)
    change[:1] = True
    for codes in columns:
        change[1:] |= codes[1:] != codes[:-1]
    return change


def run_rows(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The rows of runs (start, length) one after the other, int64."""
    placed = np.cumsum(lengths) - lengths
    rows = np.arange(int(lengths.sum()), dtype=np.int64)
    rows += np.repeat(starts - placed, lengths)
    return rows


def is_columnar(frame: pd.DataFrame) -> bool:
    return all(
        isinstance(frame[name].dtype, pd.CategoricalDtype) for name in KEY_LABELS if name in frame
    )


def with_keys(frame: pd.DataFrame, dtype: pd.CategoricalDtype) -> pd.DataFrame:
    """`frame` with its key columns recast to `dtype` (which must hold their names)."""
    present = [name for name in KEY_LABELS if name in frame]
    return frame.assign(**{name: frame[name].astype(dtype) for name in present})


def concat_frames(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """pd.concat, keeping categorical keys categorical over the union of their names."""
    if not parts or not all(is_columnar(part) for part in parts):
        return pd.concat(parts, ignore_index=True)
    present = [name for name in KEY_LABELS if name in parts[0]]
    dtype = shared_categories(part[name] for part in parts for name in present)
    return pd.concat([with_keys(part, dtype) for part in parts], ignore_index=True)
