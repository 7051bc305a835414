"""Sample windows grouped into update-period blocks aligned to wall-clock time.

Requests change once per block and cycles are found at the block level, so blocks lie on
an absolute grid: block b covers [b * period, (b + 1) * period) UNIX seconds, whatever the
data's first sample, and a block's place in the day does not depend on the data.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockLayout:
    """How a (series, windows) matrix starting at `start` maps onto blocks.

    pad: NaN windows put in front so that window 0 of the padded matrix starts a block.
    """

    start: int
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
    return BlockLayout(start, step, n_windows, windows_per_block, int(first_block), pad)


def as_blocks(values: np.ndarray, layout: BlockLayout) -> np.ndarray:
    """(series, windows) -> (series, blocks, windows_per_block), NaN-padded at both ends."""
    n = values.shape[0]
    total = layout.n_blocks * layout.windows_per_block
    padded = np.full((n, total), np.nan)
    padded[:, layout.pad : layout.pad + layout.n_windows] = values
    return padded.reshape(n, layout.n_blocks, layout.windows_per_block)


def block_mean(values: np.ndarray, layout: BlockLayout) -> np.ndarray:
    """Mean usage of each block, NaN for blocks without a sample: (series, blocks)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(as_blocks(values, layout), axis=2)
