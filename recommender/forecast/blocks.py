"""Sample windows grouped into update-period blocks aligned to wall-clock time.

Requests change once per block and cycles are found at the block level, so blocks lie on
an absolute grid: block b covers [b * period, (b + 1) * period) UNIX seconds, whatever the
data's first sample, and a block's place in the day does not depend on the data.

Every block's true mean (`KnownLevels`) is the backtest's perfect-forecast reference: the
`forecast-perfect` strategy runs the whole policy on them in place of forecasts. Its
distance to `forecast` is what forecast error costs, and what it still leaves is the cost
of the noise inside blocks, which no forecast of levels removes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.arrays import KEY_COLUMNS, UsageArrays
from recommender.forecast.quantiles import gapless_mean


@dataclass(frozen=True)
class BlockLayout:
    """How a (series, windows) matrix maps onto blocks: `pad` NaN windows put in front
    make window 0 of the padded matrix start block `first_block`."""

    step: int
    n_windows: int
    windows_per_block: int
    first_block: int
    pad: int

    @property
    def period(self) -> int:
        return self.step * self.windows_per_block

    @property
    def n_blocks(self) -> int:
        return -(-(self.pad + self.n_windows) // self.windows_per_block)

    @property
    def block_ids(self) -> np.ndarray:
        """Absolute block numbers (UNIX seconds // period), int64 (n_blocks,)."""
        return self.first_block + np.arange(self.n_blocks, dtype=np.int64)


def layout_for(start: int, step: int, n_windows: int, windows_per_block: int) -> BlockLayout:
    """The block layout of windows [start, start + n_windows * step)."""
    period = step * windows_per_block
    first_block = start // period
    pad = int((start - first_block * period) // step)
    return BlockLayout(step, n_windows, windows_per_block, int(first_block), pad)


def as_blocks(values: np.ndarray, layout: BlockLayout) -> np.ndarray:
    """(series, windows) -> (series, blocks, windows_per_block), NaN-padded at both ends."""
    n = values.shape[0]
    total = layout.n_blocks * layout.windows_per_block
    padded = np.full((n, total), np.nan)
    padded[:, layout.pad : layout.pad + layout.n_windows] = values
    return padded.reshape(n, layout.n_blocks, layout.windows_per_block)


@dataclass(frozen=True)
class KnownLevels:
    """True block means of a whole history: (series, blocks) from `first_block` on the
    grid of `blocks`, one row per entry of `keys`."""

    keys: pd.MultiIndex
    period: int
    first_block: int
    means: np.ndarray

    @classmethod
    def of(cls, usage: UsageArrays, windows_per_block: int) -> KnownLevels:
        """The block means of `usage` on the planner's block grid."""
        layout = layout_for(usage.start, usage.step, usage.n_windows, windows_per_block)
        return cls(
            keys=_key_index(usage.keys),
            period=layout.period,
            first_block=layout.first_block,
            means=gapless_mean(as_blocks(usage.cpu, layout), axis=2),
        )

    def aligned(self, keys: pd.DataFrame) -> KnownLevels:
        """The same levels with one row per series of `keys` (NaN for a series the
        history does not hold): matched once, so that `lookup` needs no keys."""
        rows = self.keys.get_indexer(_key_index(keys))
        means = np.full((len(rows), self.means.shape[1]), np.nan)
        means[rows >= 0] = self.means[rows[rows >= 0]]
        return KnownLevels(_key_index(keys), self.period, self.first_block, means)

    def lookup(self, block_ids: np.ndarray) -> np.ndarray:
        """Means of blocks `block_ids` for every series (NaN: a block not held)."""
        columns = np.asarray(block_ids, dtype=np.int64) - self.first_block
        inside = (columns >= 0) & (columns < self.means.shape[1])
        picked = self.means[:, np.where(inside, columns, 0)]
        return np.where(inside[None, :], picked, np.nan)


def _key_index(keys: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(keys[list(KEY_COLUMNS)].astype(str))
