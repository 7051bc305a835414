"""Every block's true mean CPU, for the backtest's perfect-forecast reference.

How much would a better forecast buy? The `forecast-perfect` strategy runs the
forecaster's whole policy (margins, hysteresis, reactions, change cap, memory)
but hands the planner the true mean of every update block in place of its
forecasts, past and future. Its distance to `forecast` is what forecast error
costs; what it still leaves is the cost of the noise inside blocks under the
policy's constraints, which no forecast of levels removes. Only a backtest,
which holds the whole history, can build one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.arrays import KEY_COLUMNS, UsageArrays
from recommender.forecast.blocks import block_mean, layout_for


@dataclass(frozen=True)
class KnownLevels:
    """True block means of a whole history: (series, blocks) from `first_block`.

    Block b covers [b * period, (b + 1) * period) UNIX seconds, as in `blocks`.
    """

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

    def lookup(self, keys: pd.DataFrame, block_ids: np.ndarray) -> np.ndarray:
        """Means of blocks `block_ids` for the series `keys` (series, len(block_ids)).

        NaN for a series or a block the history does not hold.
        """
        rows = self.keys.get_indexer(_key_index(keys))
        columns = np.asarray(block_ids, dtype=np.int64) - self.first_block
        inside = (columns >= 0) & (columns < self.means.shape[1])
        out = np.full((len(rows), len(columns)), np.nan)
        known = rows >= 0
        picked = self.means[rows[known]][:, np.where(inside, columns, 0)]
        out[known] = np.where(inside[None, :], picked, np.nan)
        return out


def _key_index(keys: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(keys[list(KEY_COLUMNS)].astype(str))
