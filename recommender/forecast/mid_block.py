"""The block in force: what the live strategy does between two block boundaries.

A plan starts at the next block boundary after the history; the block the history
ends in is already under way. The published schedule still has to say what holds
in it, or a follower that starts (or misses a pass) mid-block has nothing to apply
until the next boundary. Between boundaries the strategy keeps the requests in
force and only reacts: CPU rises after `react_after_windows` windows clearly
above the request, memory rises when the need eats into half its headroom, and a
container with nothing in force gets the level a boundary would set. This plays
those rules once, from what is known at the history's end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.data.arrays import UsageArrays
from recommender.forecast.settings import ForecastSettings
from tailor.change_budget import ChangeBudget


@dataclass(frozen=True)
class BlockInForce:
    """The block the history ends in.

    start: UNIX seconds the block began; at: the history's end, when a change made
    in it counts against the change budget; recent_low / recent_high: (series,)
    the lowest and highest CPU usage of the last `react_after_windows` windows
    (NaN when one of them is unknown / none is).
    """

    start: float
    at: float
    recent_low: np.ndarray
    recent_high: np.ndarray


def block_in_force(usage: UsageArrays, period: int, settings: ForecastSettings) -> BlockInForce:
    """The block holding the history's last window, and the usage a reaction reads."""
    end = usage.start + usage.n_windows * usage.step
    start = ((end - usage.step) // period) * period
    recent = usage.cpu[:, -settings.react_after_windows :]
    if recent.shape[1] == 0:
        unknown = np.full(usage.n_series, np.nan)
        return BlockInForce(float(start), float(end), unknown, unknown)
    seen = ~np.isnan(recent).all(axis=1)
    high = np.max(np.where(np.isnan(recent), -np.inf, recent), axis=1)
    return BlockInForce(
        float(start), float(end), np.min(recent, axis=1), np.where(seen, high, np.nan)
    )


def play_block_in_force(
    cpu: np.ndarray,
    memory: np.ndarray,
    level: np.ndarray,
    memory_need: np.ndarray,
    settings: ForecastSettings,
    block: BlockInForce,
    budget: ChangeBudget,
    scale: np.ndarray,
    hold_until: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """CPU and memory for the rest of the block in force, as the strategy's mid-block
    step sets them; a change made is recorded in `budget` at `block.at`.

    cpu, memory: (series,) in force (NaN = none); level: the CPU level a boundary
    would set now (the coming blocks' need); memory_need: the coming block's memory
    need (with any OOM floor); scale: the recent peak a reaction's "clearly above"
    is a share of; hold_until: the OOM hold's end, before which memory does not fall.
    A reaction raises CPU to the recent usage plus `react_margin`, at least to
    `level`, while the budget has a change left; memory rides along with it.
    """
    s = settings
    may_react = budget.left(block.at) > 0
    unset = np.isnan(cpu) & ~np.isnan(level)
    with np.errstate(invalid="ignore"):
        short = may_react & (block.recent_low > cpu + s.react_min_fraction * scale)
        wanted = np.fmax(block.recent_high * (1.0 + s.react_margin), level)
        raised = short & (wanted > cpu)
    new_cpu = np.where(unset, level, np.where(raised, wanted, cpu))
    known = ~np.isnan(memory_need)
    memory_unset = np.isnan(memory) & known
    up = may_react & (memory_need > memory * (1.0 + s.memory_margin / 2.0))
    held = hold_until > block.at
    along = raised & known & ((memory_need > memory) | ~held)
    new_memory = np.where(memory_unset | up | along, memory_need, memory)
    moved = ~np.isclose(new_cpu, cpu, equal_nan=True) | ~np.isclose(
        new_memory, memory, equal_nan=True
    )
    first_setting = np.isnan(cpu) & np.isnan(memory)
    budget.record(moved & ~first_setting, np.zeros(len(cpu)), block.at)
    return new_cpu, new_memory
