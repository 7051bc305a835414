"""Cut a history into blocks of containers: the unit of parallel work.

A block is stepped by one Python loop over its windows with numpy over its
containers, so blocks should be wide (many containers) and short (only the
windows its containers actually span). Containers are ordered by their first
sample and a new block starts when the next container begins after every
container of the current block has ended (for example the next month of the
Bitbrains trace), so no block steps through long stretches of nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.backtest.history import ReplayHistory
from recommender.data.arrays import UsageArrays
from recommender.replay import Fleet, Requests

DEFAULT_BLOCK_SIZE = 256


@dataclass(frozen=True)
class ReplayBlock:
    """A slice of the history: some containers over the windows they span."""

    index: int
    rows: np.ndarray  # (n,) indices of these containers in the history
    usage: UsageArrays  # trimmed to the block's windows
    initial: Requests
    memory_limit_ratio: np.ndarray  # (n,)
    evaluation_start: np.ndarray  # (n,) first evaluated window, block coordinates
    last_window: np.ndarray  # (n,) last window with a sample, block coordinates

    @property
    def size(self) -> int:
        return self.usage.n_series

    def fleet(self) -> Fleet:
        u = self.usage
        return Fleet(u.keys, u.start, u.step, self.memory_limit_ratio)


def plan_blocks(history: ReplayHistory, block_size: int | None = None) -> list[np.ndarray]:
    """Row indices of each block, every container in exactly one block."""
    limit = block_size or DEFAULT_BLOCK_SIZE
    has_samples = history.last_window >= history.first_window
    order = np.lexsort((np.arange(history.size), history.first_window))
    order = order[has_samples[order]]
    blocks: list[list[int]] = []
    block_end = -1
    for row in order.tolist():
        starts_after = history.first_window[row] > block_end
        if not blocks or len(blocks[-1]) >= limit or starts_after:
            blocks.append([])
            block_end = -1
        blocks[-1].append(row)
        block_end = max(block_end, int(history.last_window[row]))
    return [np.asarray(rows, dtype=np.int64) for rows in blocks]


def cut_block(history: ReplayHistory, index: int, rows: np.ndarray) -> ReplayBlock:
    """The block of `rows`, trimmed to the windows those containers span."""
    begin = int(history.first_window[rows].min())
    end = int(history.last_window[rows].max()) + 1
    usage = history.usage
    trimmed = UsageArrays(
        keys=usage.keys.iloc[rows].reset_index(drop=True),
        start=usage.start + begin * usage.step,
        step=usage.step,
        cpu=np.ascontiguousarray(usage.cpu[rows, begin:end]),
        memory=np.ascontiguousarray(usage.memory[rows, begin:end]),
    )
    initial = Requests(
        history.initial.cpu[rows].copy(),
        history.initial.memory[rows].copy(),
        history.initial.memory_limit[rows].copy(),
    )
    return ReplayBlock(
        index=index,
        rows=rows,
        usage=trimmed,
        initial=initial,
        memory_limit_ratio=history.memory_limit_ratio[rows].copy(),
        evaluation_start=history.evaluation_start[rows] - begin,
        last_window=history.last_window[rows] - begin,
    )
