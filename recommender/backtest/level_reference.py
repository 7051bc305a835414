"""How far knowing each block's level gets: the reference for what forecasting can buy.

A forecaster predicts the level (and at best the spread) of the coming update
block; what varies inside the block is noise it cannot predict. This reference
is handed both for free: every block of `block` windows gets one flat CPU
request from that block's true mean and standard deviation, either mean x q or
mean + z x std, with one q or z per container picked in hindsight. One price per
shortfall window, the same for the whole fleet, spends the shortfall budget
where it saves the most (bisected to the budget), as the strategies' margins
do. The slack left is what the noise inside blocks costs: no forecast of levels,
however good, sizes flat blocks below it. It is a reference, not a bound on
strategies that resize mid-block.

Memory has its own: every block's limit at that block's true peak
(`peak_reference`). A limit under the peak is an OOM kill, so there is no noise
to trade against a budget; what is left is how far the peak of a block stands
above the memory used through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MULTIPLIERS = np.concatenate([np.linspace(0.5, 3.0, 101), np.linspace(3.05, 10.0, 60)])
SPREADS = np.linspace(-1.0, 8.0, 181)
BISECTION_STEPS = 80


@dataclass(frozen=True)
class LevelReference:
    """Fleet figures of the level-clairvoyant reference at its shortfall budget."""

    relative_slack: float  # sum of max(request - usage, 0) / sum of request
    shortfall_rate: float  # shortfall windows / evaluated windows
    windows: int  # evaluated windows


def evaluated_blocks(
    values: np.ndarray, start: np.ndarray, block: int, what: str
) -> tuple[np.ndarray, int]:
    """Each series' evaluated windows from its own start, cut into blocks (n, blocks,
    block; NaN where unsampled), and how many windows hold a sample."""
    if block < 1:
        raise ValueError("a block needs at least one window")
    start = np.asarray(start, dtype=np.int64)
    n, total = values.shape
    length = max(int(total - start.min()), 0)
    blocks = -(-length // block)
    index = start[:, None] + np.arange(blocks * block)[None, :]
    inside = index < total
    picked = np.where(inside, values[np.arange(n)[:, None], np.minimum(index, total - 1)], np.nan)
    windows = int(np.sum(~np.isnan(picked)))
    if windows == 0:
        raise ValueError(f"no evaluated {what} usage")
    return picked.reshape(n, blocks, block), windows


def _candidates(
    usage: np.ndarray, at_least_mean: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slack, shortfall windows and request per (series, candidate), summed over blocks.

    With `at_least_mean` only rules that never ask less than the block's mean
    (q >= 1, z >= 0) are candidates."""
    seen = ~np.isnan(usage)
    counts = seen.sum(axis=2)
    filled = np.where(seen, usage, 0.0)
    mean = np.divide(filled.sum(axis=2), counts, out=np.zeros(counts.shape), where=counts > 0)
    deviation = np.where(seen, usage - mean[:, :, None], 0.0)
    spread = np.sqrt(
        np.divide((deviation**2).sum(axis=2), counts, out=np.zeros(counts.shape), where=counts > 0)
    )
    lowest_q, lowest_z = (1.0, 0.0) if at_least_mean else (-np.inf, -np.inf)
    requests = [mean * q for q in MULTIPLIERS if q >= lowest_q]
    requests += [mean + z * spread for z in SPREADS if z >= lowest_z]
    slack, short, requested = [], [], []
    for level in requests:
        level = np.maximum(level, 0.0)[:, :, None]
        slack.append(np.where(seen, np.maximum(level - filled, 0.0), 0.0).sum(axis=(1, 2)))
        short.append((seen & (filled > level)).sum(axis=(1, 2)))
        requested.append((level[:, :, 0] * counts).sum(axis=1))
    return np.stack(slack, axis=1), np.stack(short, axis=1), np.stack(requested, axis=1)


def level_reference(
    cpu: np.ndarray,
    start: np.ndarray,
    block: int,
    budget_rate: float,
    at_least_mean: bool = False,
) -> LevelReference:
    """The reference on usage `cpu` (series, windows) evaluated from `start` (series,).

    block: windows per block; budget_rate: shortfall windows allowed per
    evaluated window over the fleet (e.g. the vpa strategy's measured rate);
    at_least_mean: no block's request below its own mean usage.
    """
    if not 0.0 <= budget_rate <= 1.0:
        raise ValueError("the shortfall budget is a rate in [0, 1]")
    usage, windows = evaluated_blocks(cpu, start, block, "CPU")
    slack, short, requested = _candidates(usage, at_least_mean)
    rows = np.arange(slack.shape[0])
    allowed = budget_rate * windows

    def pick(price: float) -> np.ndarray:
        return np.argmin(slack + price * short, axis=1)

    low, high = 0.0, float(slack.max(initial=0.0)) + 1.0  # at `high` a shortfall never pays
    if short[rows, pick(high)].sum() > allowed:
        high = np.inf
    else:
        for _ in range(BISECTION_STEPS):
            middle = (low + high) / 2.0
            if short[rows, pick(middle)].sum() > allowed:
                low = middle
            else:
                high = middle
    choice = pick(high) if np.isfinite(high) else np.argmin(short * 1e12 + slack, axis=1)
    total_request = float(requested[rows, choice].sum())
    return LevelReference(
        relative_slack=float(slack[rows, choice].sum()) / max(total_request, 1e-12),
        shortfall_rate=float(short[rows, choice].sum()) / windows,
        windows=windows,
    )


def peak_reference(memory: np.ndarray, start: np.ndarray, block: int) -> LevelReference:
    """Every block of `block` windows limited at its own true memory peak (no OOM kill).

    memory: (series, windows) peak usage per window, evaluated from `start` (series,).
    """
    usage, windows = evaluated_blocks(memory, start, block, "memory")
    counts = np.sum(~np.isnan(usage), axis=2)
    peaks = np.max(np.nan_to_num(usage, nan=0.0), axis=2)  # memory is never negative
    limit = float(np.sum(peaks * counts))
    slack = limit - float(np.nansum(usage))  # a block's peak is never below its usage
    return LevelReference(
        relative_slack=slack / max(limit, 1e-12), shortfall_rate=0.0, windows=windows
    )
