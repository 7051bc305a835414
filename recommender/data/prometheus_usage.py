"""The canonical usage frame cut from a load's grids, a shard of rows at a time (pure).

At 10,000 containers x 8 days a grid is 184 MB and the usage frame 1.7 GB. Cutting
each grid whole (`grid[order][kept]`) made a sorted copy of it first, and building the
frame from separate columns copied them all again into one block: the load's peak
held the grids, their copies and the frame at once. Here the frame's float columns
are one preallocated block, each filled from its grid a shard of rows at a time and
the grid let go as soon as its column is full, so the grids' memory goes as the
frame's comes.

Window j of the usage is [T_j, T_j + step): its CPU average and memory peak are the
answers at grid point T_{j+1}, its requests and limits those in force at T_j. The
key columns are categorical (one code per row, the names once), the rows sorted by
namespace, workload, pod, container and time, as `validate_usage` sorts.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from recommender.data.columnar import shared_categories
from recommender.data.prometheus_settings import PrometheusSourceError
from recommender.data.schema import (
    KEY_LABELS,
    RESOURCE_COLUMNS,
    THROTTLED_COLUMN,
    DataFormatError,
    validate_usage,
)
from recommender.data.timestamps import TIMESTAMP_DTYPE

#: containers cut at once: their copies stay a few MB whatever the fleet's size
SHARD_ROWS = 512
#: the float columns, in the canonical order, and the grid column of window 0 in each
MEASURED = (
    ("cpu", 1),
    ("memory", 1),
    *((name, 0) for name in RESOURCE_COLUMNS),
    (THROTTLED_COLUMN, 1),
)


def with_spare_rows(columns: int, rows: int) -> np.ndarray:
    """A (columns x rows) float block viewing the first `rows` of one with some rows
    spare (1/64th, at least 1,024): the service's next pass folds its new windows into
    it in place (`recommender.service.history_cache_append`)."""
    return np.empty((columns, rows + rows // 64 + 1024))[:, :rows]


def shards(count: int) -> Iterator[slice]:
    """Consecutive slices of at most SHARD_ROWS rows covering 0 .. count."""
    for first in range(0, count, SHARD_ROWS):
        yield slice(first, min(first + SHARD_ROWS, count))


def usage_frame(
    keys: pd.DataFrame,
    workloads: np.ndarray,
    times: np.ndarray,
    grids: dict[str, np.ndarray | None],
) -> pd.DataFrame:
    """Rows where the window has CPU, and memory unless the container has no memory at
    all (a window missing one of the two is left out rather than half filled).

    `grids` holds a (containers x grid points) array for each name of MEASURED, or None
    where no answer had a point (the column is NaN); each is dropped from `grids` once
    its column is cut, so the caller must hold no other reference to it.
    """
    labels = keys.assign(workload=workloads)
    _check_labels(labels, times[0])
    order = labels.sort_values(list(KEY_LABELS), kind="stable").index.to_numpy()
    kept = _kept(grids["cpu"], grids["memory"], len(keys), times.size)[order]
    ends = np.zeros(order.size + 1, np.int64)
    np.cumsum(kept.sum(axis=1), out=ends[1:])
    measured = with_spare_rows(len(MEASURED), int(ends[-1]))  # one block: no copy to join them
    for at, (name, first) in enumerate(MEASURED):
        grid = grids.pop(name)
        if grid is None:
            measured[at] = np.nan
            continue
        for rows in shards(order.size):
            cut = grid[order[rows], first : first + times.size - 1][kept[rows]]
            measured[at, ends[rows.start] : ends[rows.stop]] = cut
        del grid
    frame = pd.DataFrame(measured.T, columns=[name for name, _ in MEASURED], copy=False)
    names = shared_categories([labels[name] for name in KEY_LABELS])
    per_row = np.diff(ends)
    for at, name in enumerate(KEY_LABELS):
        codes = names.categories.get_indexer(labels[name].to_numpy(dtype=object)[order])
        frame.insert(
            at,
            name,
            pd.Series(
                pd.Categorical.from_codes(np.repeat(codes, per_row), dtype=names), copy=False
            ),
        )
    frame.insert(0, "timestamp", _window_starts(times, kept, ends))
    return frame


def _kept(cpu: np.ndarray | None, memory: np.ndarray | None, count: int, points: int) -> np.ndarray:
    """Which windows (containers x windows, unsorted) become rows."""
    kept = np.zeros((count, points - 1), bool)
    if cpu is None:
        return kept
    for rows in shards(count):
        kept[rows] = ~np.isnan(cpu[rows, 1:])
        if memory is not None:
            seen = ~np.isnan(memory[rows])
            kept[rows] &= seen[:, 1:] | ~seen.any(axis=1)[:, None]
    return kept


def _window_starts(times: np.ndarray, kept: np.ndarray, ends: np.ndarray) -> pd.Series:
    """Each row's window start (timestamps in TIMESTAMP_DTYPE); pandas copies them once
    to mark them UTC, after the grids are gone."""
    micros = np.empty(int(ends[-1]), np.int64)
    starts = times[:-1].astype(np.int64) * 1_000_000
    for rows in shards(kept.shape[0]):
        chosen = kept[rows]
        micros[ends[rows.start] : ends[rows.stop]] = np.broadcast_to(starts, chosen.shape)[chosen]
    stamps = pd.DatetimeIndex(micros.view("datetime64[us]")).tz_localize("UTC")
    return pd.Series(stamps.astype(TIMESTAMP_DTYPE), copy=False)


def _check_labels(labels: pd.DataFrame, first: int) -> None:
    """The keys' rules of `validate_usage` (non-empty, no whitespace), once per series."""
    if labels.empty:
        return
    probe = labels.assign(timestamp=int(first), cpu=0.0, memory=np.nan)
    try:
        validate_usage(probe, "Prometheus")
    except DataFormatError as error:
        raise PrometheusSourceError(f"unusable history: {error}") from error
