"""The fleet allocation's per-series choices and price searches (see
`recommender.forecast.allocation`). Arrays are (series, states, levels); a series'
choice depends only on its own price, so each series is worked out alone."""

from __future__ import annotations

import numpy as np

from recommender.kernels.compiled import compiled

REACTION_BISECTION = 10  # steps between two reaction prices of the grid


@compiled
def _cheapest(
    base: np.ndarray, price: float, reactions: np.ndarray, picks: np.ndarray, weighed: bool
) -> None:
    """picks[s] = the first level minimising base (+ price x reactions if `weighed`) in
    state s; the first NaN if any, as `np.argmin`."""
    for s in range(base.shape[0]):
        best, best_value = 0, base[s, 0]
        if weighed:
            best_value = base[s, 0] + price * reactions[s, 0]
        for level in range(1, base.shape[1]):
            if best_value != best_value:
                break
            value = base[s, level]
            if weighed:
                value = base[s, level] + price * reactions[s, level]
            if value < best_value or value != value:
                best, best_value = level, value
        picks[s] = best


@compiled
def _total(values: np.ndarray, picks: np.ndarray) -> float:
    """Sum over states of `values` at the picks, left to right from 0 as numpy sums the
    four states."""
    total = 0.0
    for s in range(picks.shape[0]):
        total += values[s, picks[s]]
    return total


@compiled
def _priced(
    base: np.ndarray,
    reactions: np.ndarray,
    scale: float,
    budget: float,
    grid: np.ndarray,
    picks: np.ndarray,
) -> None:
    """Picks (into `picks`) under the smallest reaction price that fits the budget: the
    first of `grid` x scale that fits, then a bisection between it and the one before."""
    first = grid.shape[0] - 1
    for r in range(grid.shape[0]):
        _cheapest(base, scale * grid[r], reactions, picks, True)
        if _total(reactions, picks) <= budget + 1e-9:
            first = r
            break
    high = scale * grid[first]
    low = scale * grid[first - 1] if first > 0 else 0.0
    for _ in range(REACTION_BISECTION):
        middle = (low + high) / 2.0
        _cheapest(base, middle, reactions, picks, True)
        if _total(reactions, picks) <= budget + 1e-9:
            high = middle
        else:
            low = middle
    _cheapest(base, high, reactions, picks, True)


@compiled
def _choose_series(
    cost: np.ndarray,
    shortfalls: np.ndarray,
    reactions: np.ndarray,
    price: float,
    budget: float,
    grid: np.ndarray,
    picks: np.ndarray,
) -> float:
    """One series' picks under `price` (into `picks`) and the shortfalls they imply."""
    base = np.empty_like(cost)
    finite, most = np.isfinite(price), 1e-12
    for s in range(cost.shape[0]):
        for level in range(cost.shape[1]):
            if finite:
                base[s, level] = cost[s, level] + price * shortfalls[s, level]
            else:  # an infinite price: fewest shortfalls first, cost breaks ties
                base[s, level] = shortfalls[s, level] * 1e12 + cost[s, level]
            most = max(most, cost[s, level])
    _cheapest(base, 0.0, reactions, picks, False)
    if _total(reactions, picks) > budget + 1e-9:
        _priced(base, reactions, most, budget, grid, picks)
    return _total(shortfalls, picks)


@compiled
def choose(
    cost: np.ndarray,
    shortfalls: np.ndarray,
    reactions: np.ndarray,
    price: np.ndarray,
    budget: float,
    grid: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per series, the picks under its price and their shortfalls."""
    n, states = cost.shape[0], cost.shape[1]
    picks = np.empty((n, states), dtype=np.int64)
    short = np.empty(n)
    for i in range(n):
        short[i] = _choose_series(
            cost[i], shortfalls[i], reactions[i], price[i], budget, grid, picks[i]
        )
    return picks, short


@compiled
def _fits(
    cost: np.ndarray,
    shortfalls: np.ndarray,
    reactions: np.ndarray,
    price: float,
    allowed: float,
    budget: float,
    grid: np.ndarray,
    picks: np.ndarray,
) -> bool:
    """Whether a series' shortfalls under `price` stay within `allowed`."""
    return _choose_series(cost, shortfalls, reactions, price, budget, grid, picks) <= allowed


@compiled
def smallest_price(
    cost: np.ndarray,
    shortfalls: np.ndarray,
    reactions: np.ndarray,
    allowed: np.ndarray,
    budget: float,
    prices: np.ndarray,
    grid: np.ndarray,
    grid_steps: int,
    refine_steps: int,
) -> np.ndarray:
    """Per series, about the smallest price whose shortfalls stay within `allowed`:
    bisection over `prices`, then geometric refinement.

    The same search as the fleet price's in `recommender.forecast.allocation.allocate`
    (one price for all series, there), kept apart rather than shared so that both stay
    bit for bit as they were. They differ where the bisection ends on an infinite
    price: the cap here is a hard per-series limit, so the refinement goes on between
    the last finite grid price and 1e3 times it and keeps a finite price if one fits,
    infinity only if none does; the fleet search takes infinity as it is."""
    found = np.empty(cost.shape[0])
    picks = np.empty(cost.shape[1], dtype=np.int64)
    for i in range(cost.shape[0]):
        offer = cost[i], shortfalls[i], reactions[i]
        limits = allowed[i], budget
        low, high = 0, prices.shape[0] - 1
        for _ in range(grid_steps):
            middle = (low + high) // 2
            if _fits(*offer, prices[middle], *limits, grid, picks):
                high = middle
            else:
                low = min(middle + 1, high)
        upper, lower = prices[high], prices[max(high - 1, 0)]
        finite = np.isfinite(upper)
        if not finite:
            upper = lower * 1e3
        for _ in range(refine_steps):
            middle = np.sqrt(max(lower, 1e-12) * upper)
            if _fits(*offer, middle, *limits, grid, picks):
                upper = middle
            else:
                lower = middle
        if not (finite or _fits(*offer, upper, *limits, grid, picks)):
            upper = np.inf
        found[i] = upper
    return found
