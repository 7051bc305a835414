"""Every block's true mean CPU, for the backtest's perfect-forecast reference.

The `forecast-perfect` strategy runs the whole policy on these in place of forecasts: its
distance to `forecast` is what forecast error costs, and what it still leaves is the cost
of the noise inside blocks, which no forecast of levels removes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.arrays import KEY_COLUMNS, UsageArrays
from recommender.forecast.blocks import block_mean, layout_for


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
            means=block_mean(usage.cpu, layout),
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
