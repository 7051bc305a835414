"""Spending the fleet's shortfall allowance where it saves the most CPU.

Every series offers, per state, candidate margins with their replayed cost
(core-windows of margin), shortfall windows and mid-block reactions. Slack and
shortfall rate are judged over the whole fleet, so the cheapest way to meet a
fleet shortfall target is a single price per shortfall window, the same for
every series (the Lagrangian of "minimise margin subject to total shortfalls"):
a container whose spikes cost cores to cover takes a few more shortfall windows,
one whose margin is cheap covers everything. Two guards bound any single series:
its own shortfall rate never exceeds `cap`, and its reactions stay within the
daily budget of changes (a per-series price on reactions).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PRICE_GRID = np.concatenate([[0.0], np.geomspace(1e-4, 1e6, 61), [np.inf]])
REACTION_GRID = np.concatenate([[0.0], np.geomspace(1e-4, 1e2, 13)])
BISECTION_STEPS = 7  # enough to search a 63-point grid
REACTION_BISECTION = 10  # steps between two reaction prices of the grid


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


def _reactions_of(reactions: np.ndarray, picks: np.ndarray) -> np.ndarray:
    return np.take_along_axis(reactions, picks[..., None], axis=2)[..., 0].sum(axis=1)


def _choose(offer: Offer, price: np.ndarray, budget: float) -> tuple[np.ndarray, np.ndarray]:
    """Per series, at shortfall price `price` (series,): the candidate per state.

    Minimises cost + price * shortfalls per state, plus mu * reactions with the
    smallest reaction price mu that brings reactions within `budget` (a coarse
    grid brackets it, bisection narrows it). Returns the choice (series, states)
    and the shortfall windows it implies (series,).
    """
    n = offer.cost.shape[0]
    scale = np.maximum(offer.cost.max(axis=(1, 2)), 1e-12)
    finite = np.isfinite(price)
    shortfall_term = np.where(finite, price, 0.0)[:, None, None] * offer.shortfalls
    base = np.where(finite[:, None, None], offer.cost + shortfall_term, 0.0)
    # an infinite price: fewest shortfalls first, cost breaks ties
    base = np.where(finite[:, None, None], base, offer.shortfalls * 1e12 + offer.cost)
    grid = scale[:, None] * REACTION_GRID[None, :]  # (n, R)
    within = np.stack(
        [
            _reactions_of(offer.reactions, _picks(base, offer.reactions, grid[:, r]))
            <= budget + 1e-9
            for r in range(grid.shape[1])
        ],
        axis=1,
    )
    first = np.where(within.any(axis=1), np.argmax(within, axis=1), grid.shape[1] - 1)
    high = grid[np.arange(n), first]
    low = np.where(first > 0, grid[np.arange(n), np.maximum(first - 1, 0)], 0.0)
    for _ in range(REACTION_BISECTION):
        middle = (low + high) / 2.0
        fits = (
            _reactions_of(offer.reactions, _picks(base, offer.reactions, middle)) <= budget + 1e-9
        )
        high = np.where(fits, middle, high)
        low = np.where(fits, low, middle)
    choice = _picks(base, offer.reactions, high)
    shortfalls = np.take_along_axis(offer.shortfalls, choice[..., None], axis=2)[..., 0]
    return choice, shortfalls.sum(axis=1)


def _smallest_price(
    offer: Offer, allowed: np.ndarray, budget: float, floor: np.ndarray | None = None
) -> np.ndarray:
    """Per series, the smallest grid price whose choice keeps shortfalls <= allowed (series,)."""
    n = offer.cost.shape[0]
    low = np.zeros(n, dtype=np.int64)
    high = np.full(n, len(PRICE_GRID) - 1, dtype=np.int64)
    for _ in range(BISECTION_STEPS):
        middle = (low + high) // 2
        price = PRICE_GRID[middle]
        if floor is not None:
            price = np.maximum(price, floor)
        _, shortfalls = _choose(offer, price, budget)
        fits = shortfalls <= allowed
        high = np.where(fits, middle, high)
        low = np.where(fits, low, np.minimum(middle + 1, high))
    return PRICE_GRID[high]


def allocate(
    offer: Offer, target: float, cap: float, budget: float
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate per (series, state) meeting the fleet target, and each series' price.

    target: fleet shortfall rate (shortfall windows / windows over all series);
    cap: the most any one series may take; budget: reactions per day per series.
    """
    floor = _smallest_price(offer, cap * offer.windows, budget)
    allowed_total = target * offer.windows.sum()
    low, high = 0, len(PRICE_GRID) - 1
    for _ in range(BISECTION_STEPS):
        middle = (low + high) // 2
        _, shortfalls = _choose(offer, np.maximum(PRICE_GRID[middle], floor), budget)
        if shortfalls.sum() <= allowed_total:
            high = middle
        else:
            low = min(middle + 1, high)
    price = np.maximum(PRICE_GRID[high], floor)
    choice, _ = _choose(offer, price, budget)
    return choice, price
