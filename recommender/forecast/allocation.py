"""Spending the fleet's shortfall allowance where it saves the most CPU.

Each series offers, per state, candidate margins with their replayed cost, shortfalls
and reactions. Shortfall is judged over the fleet, so the cheapest way to meet its
target is one price per shortfall window for every series (the Lagrangian): spiky
containers take a few more shortfalls, cheap ones cover everything. No series exceeds
`cap`, and its reactions stay within the daily budget (a per-series reaction price).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PRICE_GRID = np.concatenate([[0.0], np.geomspace(1e-4, 1e6, 61), [np.inf]])
REACTION_GRID = np.concatenate([[0.0], np.geomspace(1e-4, 1e2, 13)])
BISECTION_STEPS = 7  # enough to search a 63-point grid
REACTION_BISECTION = 10  # steps between two reaction prices of the grid
REFINE_STEPS = 8  # steps between two shortfall prices of the grid


@dataclass(frozen=True)
class Offer:
    """Candidate margins of each series, per state: arrays (series, states, levels)."""

    cost: np.ndarray  # core-windows of margin the candidate adds over the replayed past
    shortfalls: np.ndarray  # replayed shortfall windows
    reactions: np.ndarray  # replayed mid-block raises per day
    windows: np.ndarray  # (series,) replayed windows


def _picks(base: np.ndarray, reactions: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Candidate per (series, state) minimising base + mu * reactions; mu is (series,)."""
    return np.argmin(base + mu[:, None, None] * reactions, axis=2)


def _total_of(values: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """Sum over states of `values` at the picked candidates; picks (series, [R,] states).

    Plain indexing, not `take_along_axis`: these arrays are small and this runs
    hundreds of times per allocation, so numpy's per-call overhead is the cost."""
    rows = np.arange(picks.shape[0]).reshape((-1,) + (1,) * (picks.ndim - 1))
    return values[rows, np.arange(picks.shape[-1]), picks].sum(axis=-1)


def _priced(
    base: np.ndarray, reactions: np.ndarray, scale: np.ndarray, budget: float
) -> np.ndarray:
    """Choice under the smallest reaction price that fits the budget (grid, then bisection).

    The grid is weighed in one broadcast: it runs on the few series over the budget."""
    n = base.shape[0]
    grid = scale[:, None] * REACTION_GRID[None, :]  # (n, R)
    weighed = np.argmin(base[:, None] + grid[:, :, None, None] * reactions[:, None], axis=3)
    within = _total_of(reactions, weighed) <= budget + 1e-9  # (n, R)
    first = np.where(within.any(axis=1), np.argmax(within, axis=1), grid.shape[1] - 1)
    high = grid[np.arange(n), first]
    low = np.where(first > 0, grid[np.arange(n), np.maximum(first - 1, 0)], 0.0)
    # the bisection's picks read from the flat reactions: a step is a handful of calls
    flat = np.ascontiguousarray(reactions).reshape(-1)
    cells = np.arange(n * base.shape[1]).reshape(n, -1) * base.shape[2]
    for _ in range(REACTION_BISECTION):
        middle = (low + high) / 2.0
        picks = np.argmin(base + middle[:, None, None] * reactions, axis=2)
        fits = flat[cells + picks].sum(axis=1) <= budget + 1e-9
        high = np.where(fits, middle, high)
        low = np.where(fits, low, middle)
    return _picks(base, reactions, high)


def _choose(offer: Offer, price: np.ndarray, budget: float) -> tuple[np.ndarray, np.ndarray]:
    """Per series, the candidate per state minimising cost + `price` x shortfalls + mu x
    reactions (mu the smallest price that fits `budget`), and the shortfalls it implies."""
    finite = np.isfinite(price)
    base = offer.cost + np.where(finite, price, 0.0)[:, None, None] * offer.shortfalls
    if not finite.all():  # an infinite price: fewest shortfalls first, cost breaks ties
        base = np.where(finite[:, None, None], base, offer.shortfalls * 1e12 + offer.cost)
    choice = np.argmin(base, axis=2)
    over = np.flatnonzero(_total_of(offer.reactions, choice) > budget + 1e-9)
    if over.size:  # only series over the reaction budget need a reaction price
        scale = np.maximum(offer.cost[over].max(axis=(1, 2)), 1e-12)
        choice[over] = _priced(base[over], offer.reactions[over], scale, budget)
    return choice, _total_of(offer.shortfalls, choice)


def _smallest_price(
    offer: Offer, allowed: np.ndarray, budget: float, floor: np.ndarray | None = None
) -> np.ndarray:
    """Per series, about the smallest price whose choice keeps shortfalls <= allowed."""
    n = offer.cost.shape[0]
    lowest = np.zeros(n) if floor is None else floor

    def fits(price: np.ndarray) -> np.ndarray:
        return _choose(offer, np.maximum(price, lowest), budget)[1] <= allowed

    low = np.zeros(n, dtype=np.int64)
    high = np.full(n, len(PRICE_GRID) - 1, dtype=np.int64)
    for _ in range(BISECTION_STEPS):
        middle = (low + high) // 2
        ok = fits(PRICE_GRID[middle])
        high = np.where(ok, middle, high)
        low = np.where(ok, low, np.minimum(middle + 1, high))
    upper = PRICE_GRID[high]
    lower = PRICE_GRID[np.maximum(high - 1, 0)]
    finite = np.isfinite(upper)
    upper = np.where(finite, upper, lower * 1e3)
    for _ in range(REFINE_STEPS):
        middle = np.sqrt(np.maximum(lower, 1e-12) * upper)
        ok = fits(middle)
        upper = np.where(ok, middle, upper)
        lower = np.where(ok, lower, middle)
    return np.where(finite | fits(upper), upper, np.inf)


def allocate(
    offer: Offer, target: float, cap: float, budget: float
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate per (series, state) meeting the fleet shortfall rate `target`, and each
    series' price; `cap`: the most one series may take; `budget`: its reactions a day."""
    floor = _smallest_price(offer, cap * offer.windows, budget)
    allowed_total = target * offer.windows.sum()

    def total(price: float) -> float:
        return float(_choose(offer, np.maximum(price, floor), budget)[1].sum())

    low, high = 0, len(PRICE_GRID) - 1
    for _ in range(BISECTION_STEPS):
        middle = (low + high) // 2
        if total(PRICE_GRID[middle]) <= allowed_total:
            high = middle
        else:
            low = min(middle + 1, high)
    upper, lower = float(PRICE_GRID[high]), float(PRICE_GRID[max(high - 1, 0)])
    if np.isfinite(upper):
        for _ in range(REFINE_STEPS):
            between = float(np.sqrt(max(lower, 1e-12) * upper))
            if total(between) <= allowed_total:
                upper = between
            else:
                lower = between
    price = np.maximum(upper, floor)
    choice, _ = _choose(offer, price, budget)
    return choice, price
