"""The best flat request per block, chosen knowing every window of the block.

`level_reference` hands each block its true mean and spread and keeps one rule
per container. This reference knows more: each block of a fixed grid gets the
one flat CPU request that is best for the fleet given all of that block's
windows, so it also knows which blocks hold a few tall spikes worth letting
through and which are worth covering. Nothing that holds its request flat on
that grid can leave less slack at the same shortfall budget, so the figure
splits what a strategy leaves into what flat blocks cost at all and what
not knowing the coming windows costs.

The bound is certified as `hindsight`'s is (`ratio_search`): only the
minimiser differs. For a ratio theta and a price lam per shortfall window,
every block independently takes the request minimising slack - theta x
request + lam x shortfalls; its candidates are 0 and the block's own samples.

On traces where a few heavy containers burst, the best choice asks almost
nothing of them: their windows count once each against the budget while their
cores dominate the slack (on the one-day cuts of Bitbrains, a few pieces asked
for a sliver of their mean take most of the shortfall windows: see
docs/results/implementation-choices.md). No recommender
would starve a container so, and neither does any strategy here. With
`at_least_mean` every block's request is at least its own mean usage (what a
batch job needs for its throughput); the candidates are then that mean and the
samples above it, which still holds the optimum, as between two candidates the
cost is linear in the request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from recommender.backtest.level_reference import evaluated_blocks
from recommender.backtest.ratio_search import Minimum, RatioSearch


@dataclass(frozen=True)
class BlockOptimum:
    """Fleet figures of the best flat blocks, and the bound they certify."""

    bound: float  # no flat request per block within the budget leaves less slack / request
    relative_slack: float  # what the best choice found within the budget leaves
    shortfall_rate: float  # its shortfall windows / evaluated windows
    windows: int  # evaluated windows


@dataclass(frozen=True)
class _Candidates:
    """Per (block, candidate): slack, request and shortfall windows, all summed over the block.

    Candidate 0 is the floor (a request of 0, or the block's mean); candidate k >= 1 is
    the block's k-th smallest sample, forbidden (infinite slack) when below the floor.
    """

    slack: np.ndarray
    request: np.ndarray
    short: np.ndarray

    def minimum(self, theta: float, price: float) -> Minimum:
        """Every block at its cheapest candidate (an infinite price forbids shortfalls)."""
        if math.isfinite(price):
            penalty = price * self.short
        else:
            penalty = np.where(self.short > 0, np.inf, 0.0)
        cost = self.slack - theta * self.request + penalty
        choice = np.argmin(cost, axis=1)[:, None]
        return Minimum(
            float(np.take_along_axis(cost, choice, axis=1).sum()),
            float(np.take_along_axis(self.request, choice, axis=1).sum()),
            float(np.take_along_axis(self.short, choice, axis=1).sum()),
        )


def _candidates(usage: np.ndarray, at_least_mean: bool) -> _Candidates:
    """usage: (blocks, windows per block), NaN where unsampled."""
    counts = np.sum(~np.isnan(usage), axis=1)
    usage = usage[counts > 0]
    counts = counts[counts > 0]
    ordered = np.sort(np.where(np.isnan(usage), np.inf, usage), axis=1)  # samples first
    length = ordered.shape[1]
    position = np.arange(1, length + 1)[None, :]
    inside = position <= counts[:, None]
    level = np.where(inside, ordered, 0.0)
    below = np.cumsum(level, axis=1)
    # samples strictly above each candidate: a tie with the request is not a shortfall,
    # so a candidate counts every sample up to the end of its run of equal values
    last = np.zeros(level.shape, dtype=bool)
    last[:, :-1] = ordered[:, 1:] != ordered[:, :-1]
    last |= position == counts[:, None]
    ends = np.where(last, position, length)
    not_above = np.minimum.accumulate(ends[:, ::-1], axis=1)[:, ::-1]
    slack = np.where(inside, position * level - below, np.inf)
    short = np.where(inside, counts[:, None] - not_above, 0)
    request = np.where(inside, counts[:, None] * level, 0.0)
    floor = np.zeros(level.shape[0])
    if at_least_mean:
        floor = below[:, -1] / counts
        slack = np.where(level >= floor[:, None], slack, np.inf)
    sampled = np.where(np.isnan(usage), floor[:, None], usage)
    under = floor[:, None] - sampled
    at_floor_short = np.sum(under < 0, axis=1).astype(np.float64)
    return _Candidates(
        slack=np.concatenate([np.maximum(under, 0.0).sum(axis=1)[:, None], slack], axis=1),
        request=np.concatenate([(counts * floor)[:, None], request], axis=1),
        short=np.concatenate([at_floor_short[:, None], short], axis=1),
    )


def block_optimum(
    cpu: np.ndarray,
    start: np.ndarray,
    block: int,
    budget_rate: float,
    at_least_mean: bool = False,
) -> BlockOptimum:
    """The reference on usage `cpu` (series, windows) evaluated from `start` (series,).

    block: windows per block; budget_rate: shortfall windows allowed per evaluated
    window over the fleet (e.g. the vpa strategy's measured rate); at_least_mean:
    no block's request below its own mean usage.
    """
    if not 0.0 <= budget_rate <= 1.0:
        raise ValueError("the shortfall budget is a rate in [0, 1]")
    usage, windows = evaluated_blocks(cpu, start, block, "CPU")
    seen = usage[~np.isnan(usage)]
    scale = float(seen.mean()) if seen.size and seen.mean() > 0 else 1.0
    candidates = _candidates(usage.reshape(-1, block) / scale, at_least_mean)
    budget = math.floor(budget_rate * windows + 1e-9)
    search = RatioSearch(candidates.minimum, budget, float(seen.sum()) / scale)
    search.run()
    if not math.isfinite(search.achieved):  # nothing to size: all usage is 0
        return BlockOptimum(bound=0.0, relative_slack=0.0, shortfall_rate=0.0, windows=windows)
    return BlockOptimum(
        bound=min(search.certified, search.achieved),
        relative_slack=search.achieved,
        shortfall_rate=search.achieved_shortfalls / windows,
        windows=windows,
    )
