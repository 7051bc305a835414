"""Query answers placed on the step grid, one row per container (pure: no I/O).

Grid point g is T_g = start + g * step, g = 0 .. W (W = windows in [start, end)).
Each answer fills an array of containers x grid points. Holding 8 bytes per container
and grid point (4 for small counts and flags), rather than a long frame with label
strings on every row, is what lets 10,000 containers fit in memory; a grid no answer
reached (throttling without a CPU limit, PSI, OOM reasons) holds nothing at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import pandas as pd

from recommender.data.prometheus_matrix import Matrix
from recommender.data.prometheus_settings import PrometheusSourceError
from recommender.data.schema import CEILINGS

LOG = logging.getLogger(__name__)
Key = tuple[str, str, str]


def label_values(matrix: Matrix, label: str) -> list[str]:
    """Each series' value of `label` ("" when absent), refusing anything but text."""
    values = []
    for metric in matrix.labels:
        value = metric.get(label, "")
        if not isinstance(value, str):
            raise PrometheusSourceError(f"label {label} of {metric!r} is not text")
        values.append(value)
    return values


class SeriesIndex:
    """Containers (namespace, pod, container) numbered in the order first seen."""

    def __init__(self) -> None:
        self.ids: dict[Key, int] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, matrix: Matrix, labels: tuple[str, str, str]) -> np.ndarray:
        """The row of each series of `matrix`, its key read from `labels`."""
        columns = [label_values(matrix, label) for label in labels]
        ids = self.ids
        return np.fromiter(
            (ids.setdefault(key, len(ids)) for key in zip(*columns, strict=True)),
            np.int64,
            count=len(matrix.labels),
        )

    def keys(self) -> pd.DataFrame:
        """namespace, pod, container of each row, in row order."""
        return pd.DataFrame(list(self.ids), columns=["namespace", "pod", "container"])


class Grid:
    """A value per container row and grid point (NaN: none), growing with rows; float64
    unless `dtype` says otherwise (float32 holds restart counts and 0/1 flags exactly).

    Several series of one row (a container exported by two scrape jobs, the app and the
    init container halves of a kube-state-metrics query) collapse to their largest value
    at each point, or their smallest with `lowest`: the `max by` / `min by` Prometheus
    would evaluate step by step at several times the CPU, done here in one numpy call.
    NaN counts only where no series has a number, as in PromQL's aggregations.
    """

    def __init__(
        self,
        start: int,
        step: int,
        points: int,
        *,
        lowest: bool = False,
        dtype: type[np.floating] = np.float64,
    ) -> None:
        self.start, self.step, self.points = start, step, points
        self.values: np.ndarray = np.full((0, points), np.nan, dtype)
        self.combine = np.fmin if lowest else np.fmax

    @property
    def filled(self) -> bool:
        """Whether any answer placed a point here (until then it holds no memory)."""
        return self.values.shape[0] > 0

    def _grow(self, need: int) -> None:
        if need > self.values.shape[0]:
            rows = max(need, self.values.shape[0] * 5 // 4)
            grown = np.full((rows, self.points), np.nan, self.values.dtype)
            grown[: self.values.shape[0]] = self.values
            self.values = grown

    def put(self, rows: np.ndarray, matrix: Matrix) -> None:
        if rows.size == 0:
            return
        self._grow(int(rows.max()) + 1)
        if self._put_block(rows, matrix):
            return
        offset = matrix.times - self.start
        column = offset // self.step
        at = np.repeat(rows * self.points, matrix.counts) + column  # in the flattened grid
        values = matrix.values
        on_grid = (offset % self.step == 0) & (column >= 0) & (column < self.points)
        if not on_grid.all():
            at, values = at[on_grid], values[on_grid]
        flat = self.values.reshape(-1)  # a view: the grid is contiguous
        if np.bincount(rows).max() == 1:  # one series a row here: no point repeats
            flat[at] = self.combine(flat[at], values)
        else:
            self.combine.at(flat, at, values)

    def _put_block(self, rows: np.ndarray, matrix: Matrix) -> bool:
        """The usual answer in one step: one series a row, each with a point at every grid
        point of one run of columns (a range query's chunk where every container was
        there throughout). False, placing nothing, for any other answer."""
        count, points = rows.size, int(matrix.counts[0])
        if points == 0 or not (matrix.counts == points).all():
            return False
        times = matrix.times.reshape(count, points)
        column = (int(times[0, 0]) - self.start) // self.step
        grid = self.start + self.step * np.arange(column, column + points, dtype=np.int64)
        if column < 0 or column + points > self.points or not (times == grid).all():
            return False
        values = matrix.values.reshape(count, points)
        columns = slice(column, column + points)
        first = int(rows[0])
        if int(rows[-1]) - first == count - 1 and (np.diff(rows) == 1).all():
            block = self.values[first : first + count, columns]  # a view: combined in place
            self.combine(block, values, out=block)
        elif np.bincount(rows).max() == 1:
            self.values[rows, columns] = self.combine(self.values[rows, columns], values)
        else:
            return False
        return True

    def rows(self, count: int) -> np.ndarray:
        """The first `count` rows (NaN for rows no answer reached)."""
        self._grow(count)
        return self.values[:count]

    def held(self, count: int) -> np.ndarray | None:
        """The first `count` rows, or None where no answer reached this grid."""
        return self.rows(count) if self.filled else None


def drop_implausible(
    values: np.ndarray, resource: str, what: str, where: Callable[[int, int], tuple[pd.Series, int]]
) -> None:
    """NaN in place of values no container can have (infinite, negative, above what a
    Kubernetes quantity holds), with a warning naming the first; NaN is left as it is.

    An exporter glitch in one sample used to fail the whole load in validation; the
    window holding it is dropped instead, as a gap would be. `where(row, column)`: the
    keys (namespace, pod, container) and the UNIX time of a value, for the warning.
    """
    ceiling = CEILINGS[resource][0]
    with np.errstate(invalid="ignore"):  # NaN is neither: left as it is
        bad = (values < 0) | (values > ceiling)
    count = int(np.count_nonzero(bad))
    if not count:
        return
    row, column = (int(i[0]) for i in np.nonzero(bad))
    key, seconds = where(row, column)
    LOG.warning(
        "skipped %d %s value(s) no container can have (infinite, negative or above what "
        "a Kubernetes quantity holds), e.g. %g for %s/%s/%s at %s",
        count,
        what,
        values[row, column],
        key["namespace"],
        key["pod"],
        key["container"],
        pd.Timestamp(int(seconds), unit="s", tz="UTC").isoformat(),
    )
    values[bad] = np.nan


def matrix_frame(matrix: Matrix, columns: dict[str, str]) -> pd.DataFrame:
    """A sparse answer as a samples frame: label columns, `time`, `value`."""
    frame = pd.DataFrame(
        {
            column: np.repeat(np.array(label_values(matrix, label), dtype=object), matrix.counts)
            for column, label in columns.items()
        }
    )
    frame["time"] = matrix.times
    frame["value"] = matrix.values
    return frame
