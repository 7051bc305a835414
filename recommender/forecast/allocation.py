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
REFINE_STEPS = 8  # steps between two shortfall prices of the grid


@dataclass(frozen=True)
class Offer:
    """Candidate margins of each series, per state: arrays (series, states, levels)."""

    cost: np.ndarray  # core-windows of margin the candidate adds over the replayed past
    shortfalls: np.ndarray  # replayed shortfall windows
    reactions: np.ndarray  # replayed mid-block raises per day
    windows: np.ndarray  # (series,) replayed windows


def allocate(
    offer: Offer, target: float, cap: float, budget: float
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate per (series, state) meeting the fleet shortfall rate `target`, and each
    series' price; `cap`: the most one series may take; `budget`: its reactions a day.

    Per series (its own price), the candidate per state minimises cost + price x
    shortfalls + mu x reactions, mu the smallest reaction price that fits the budget
    (a grid, then a bisection); an infinite price takes the fewest shortfalls. The
    per-series work is compiled (`recommender.kernels`: bisections are sequential).

    The fleet price search below is the one of `recommender.kernels.allocation.
    smallest_price` (each series' price under `cap`), written twice so that both stay
    bit for bit as they were. They differ where the bisection ends on an infinite
    price: here it is kept as it is (no finite grid price meets the fleet target, so every
    series takes its fewest shortfalls), where the per-series search refines up to
    1e3 times the last finite grid price and keeps a finite price if one fits."""
    from recommender.kernels.allocation import choose, smallest_price  # numba: lazily

    cost, shortfalls, reactions = (
        np.ascontiguousarray(values, dtype=np.float64)
        for values in (offer.cost, offer.shortfalls, offer.reactions)
    )
    budget = float(budget)
    floor = smallest_price(
        cost, shortfalls, reactions, cap * offer.windows, budget,
        PRICE_GRID, REACTION_GRID, BISECTION_STEPS, REFINE_STEPS,
    )  # fmt: skip
    allowed_total = target * offer.windows.sum()

    def _choose(price: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        price = np.ascontiguousarray(price, dtype=np.float64)
        return choose(cost, shortfalls, reactions, price, budget, REACTION_GRID)

    def total(price: float) -> float:
        return float(_choose(np.maximum(price, floor))[1].sum())

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
    choice, _ = _choose(price)
    return choice, price
