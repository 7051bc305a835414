"""The best flat request per block, chosen knowing every window of the block.

`level_reference` hands each block its true mean and spread and keeps one rule
per container. This reference knows more: each block of a fixed grid gets the
one flat CPU request that is best for the fleet given all of that block's
windows, so it also knows which blocks hold a few tall spikes worth letting
through and which are worth covering. Nothing that holds its request flat on
that grid can leave less slack at the same shortfall budget, so the figure
splits what a strategy leaves into what flat blocks cost at all and what
not knowing the coming windows costs.

The fleet objective is a ratio (slack / request) under a budget of shortfall
windows. For a price `lam` per shortfall window and a ratio `theta`, every
block independently takes the request minimising slack - theta x request +
lam x shortfalls; by Lagrangian duality, if that minimum summed over the fleet
is at least lam x budget, no choice within the budget has a ratio below
theta. The price is bisected to the budget; at each price the largest such
theta is the certified bound, and the choice at that price, which keeps to the
budget, is what the optimum achieves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.backtest.level_reference import evaluated_blocks

PRICE_STEPS = 60
RATIO_STEPS = 50


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

    Candidate 0 is a request of 0; candidate k >= 1 is the block's k-th smallest sample.
    """

    slack: np.ndarray
    request: np.ndarray
    short: np.ndarray

    def pick(self, theta: float, price: float) -> np.ndarray:
        cost = self.slack - theta * self.request + price * self.short
        return np.asarray(np.argmin(cost, axis=1))

    def totals(self, choice: np.ndarray) -> tuple[float, float, float]:
        rows = np.arange(choice.size)
        return (
            float(self.slack[rows, choice].sum()),
            float(self.request[rows, choice].sum()),
            float(self.short[rows, choice].sum()),
        )


def _candidates(usage: np.ndarray) -> _Candidates:
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
    zero = np.zeros((level.shape[0], 1))
    return _Candidates(
        slack=np.concatenate([zero, slack], axis=1),
        request=np.concatenate([zero, request], axis=1),
        short=np.concatenate([counts[:, None].astype(np.float64), short], axis=1),
    )


def _certified_ratio(candidates: _Candidates, price: float, budget: float) -> float:
    """The largest theta with min over choices of (slack - theta x request + price x
    (short - budget)) >= 0, bisected from below (0 when not even theta = 0 holds)."""

    def holds(theta: float) -> bool:
        slack, request, short = candidates.totals(candidates.pick(theta, price))
        return slack - theta * request + price * (short - budget) >= 0.0

    if not holds(0.0):
        return 0.0
    low, high = 0.0, 1.0  # slack never exceeds the request: theta = 1 never holds
    for _ in range(RATIO_STEPS):
        middle = (low + high) / 2.0
        if holds(middle):
            low = middle
        else:
            high = middle
    return low


def _achieved_ratio(candidates: _Candidates, price: float) -> tuple[float, float]:
    """Dinkelbach's fixed point at this price: (ratio, shortfall windows) of its choice."""
    theta = 0.0
    for _ in range(100):
        slack, request, short = candidates.totals(candidates.pick(theta, price))
        ratio = slack / request if request > 0 else 0.0
        if abs(ratio - theta) < 1e-12:
            break
        theta = ratio
    return theta, short


def block_optimum(
    cpu: np.ndarray, start: np.ndarray, block: int, budget_rate: float
) -> BlockOptimum:
    """The reference on usage `cpu` (series, windows) evaluated from `start` (series,).

    block: windows per block; budget_rate: shortfall windows allowed per evaluated
    window over the fleet (e.g. the vpa strategy's measured rate).
    """
    if not 0.0 <= budget_rate <= 1.0:
        raise ValueError("the shortfall budget is a rate in [0, 1]")
    usage, windows = evaluated_blocks(cpu, start, block, "CPU")
    candidates = _candidates(usage.reshape(-1, block))
    budget = budget_rate * windows
    finite = np.where(np.isfinite(candidates.slack), candidates.slack, 0.0)
    # at `high` one shortfall costs more than covering any block can
    low, high = 0.0, float(finite.max(initial=0.0) + candidates.request.max(initial=0.0)) + 1.0
    for _ in range(PRICE_STEPS):
        middle = (low + high) / 2.0
        if _achieved_ratio(candidates, middle)[1] > budget:
            low = middle
        else:
            high = middle
    ratio, short = _achieved_ratio(candidates, high)
    bound = max(_certified_ratio(candidates, price, budget) for price in (low, high))
    return BlockOptimum(
        bound=min(bound, ratio),
        relative_slack=ratio,
        shortfall_rate=short / windows,
        windows=windows,
    )
