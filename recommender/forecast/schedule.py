"""Hysteresis: turning per-block requirements into requests that change rarely.

Every change is a resize on a live pod, so a request moves only when it matters:
up as soon as the coming block needs clearly more than is in force, down only
when the next few blocks all need clearly less; either way the new level covers the
requirement of those next few blocks, so a ramp costs one change, not one per
block. A rolling 24-hour budget caps planned changes and keeps a reserve for
reactions to shortfalls and OOM kills.
"""

from __future__ import annotations

import numpy as np

from recommender.forecast.settings import ForecastSettings

FREE_RIDE_DECREASE = 0.02  # a resize happening anyway also lowers memory by this much


def cover(required: np.ndarray, blocks: int) -> np.ndarray:
    """Highest requirement of the first `blocks` columns (NaN-aware): (series,)."""
    head = required[:, :blocks]
    peak = np.max(np.where(np.isnan(head), -np.inf, head), axis=1)
    return np.where(np.isneginf(peak), np.nan, peak)


def cpu_step(
    current: np.ndarray,
    required: np.ndarray,
    settings: ForecastSettings,
    may_increase: np.ndarray,
    may_decrease: np.ndarray,
) -> np.ndarray:
    """The CPU request for the coming block given the requirement of the blocks ahead.

    current: (series,) request in force (NaN = none yet); required: (series,
    blocks ahead) starting with the coming block; may_increase, may_decrease:
    (series,) bool, what the change budget still allows.
    """
    now = required[:, 0]
    level = cover(required, settings.cover_blocks)
    unset = np.isnan(current) & ~np.isnan(level)
    up = may_increase & (now > current * (1.0 + settings.increase_threshold))
    down = may_decrease & (level < current * (1.0 - settings.decrease_threshold))
    return np.where(unset | up | down, level, current)


def memory_step(
    current: np.ndarray,
    required: np.ndarray,
    settings: ForecastSettings,
    may_increase: np.ndarray,
    may_decrease: np.ndarray,
    resizing: np.ndarray,
) -> np.ndarray:
    """The memory request (= limit) for the coming block.

    Up as soon as the requirement eats into half the headroom (or at once when
    the container is being resized anyway); down only where allowed (no OOM
    hold, budget left) and by more than the decrease threshold, or by a little
    when the container is being resized anyway (`resizing`).
    """
    unset = np.isnan(current) & ~np.isnan(required)
    wanted_up = required > current * (1.0 + settings.memory_margin / 2.0)
    up = (may_increase & wanted_up) | (resizing & (required > current))
    threshold = np.where(resizing, FREE_RIDE_DECREASE, settings.decrease_threshold)
    down = may_decrease & (required < current * (1.0 - threshold))
    return np.where(unset | up | down, required, current)


def build_schedule(
    current_cpu: np.ndarray,
    current_memory: np.ndarray,
    cpu_required: np.ndarray,
    memory_required: np.ndarray,
    settings: ForecastSettings,
    blocks_per_day: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Requests per horizon block, starting from the requests in force.

    Applies the same hysteresis the strategy applies live, block by block, with
    at most `max_changes_per_day - reserved_changes` planned changes in any
    `blocks_per_day` consecutive blocks. Returns (cpu, memory), (series, blocks).
    """
    n, horizon = cpu_required.shape
    cpu_out = np.empty((n, horizon))
    memory_out = np.empty((n, horizon))
    changed = np.zeros((n, horizon), dtype=bool)
    planned = settings.max_changes_per_day - settings.reserved_changes
    cpu, memory = current_cpu.copy(), current_memory.copy()
    for k in range(horizon):
        recent = changed[:, max(0, k - blocks_per_day + 1) : k].sum(axis=1)
        may_decrease = recent < planned
        may_increase = recent < settings.max_changes_per_day
        new_cpu = cpu_step(cpu, cpu_required[:, k:], settings, may_increase, may_decrease)
        cpu_moves = ~np.isclose(new_cpu, cpu, equal_nan=True)
        new_memory = memory_step(
            memory, memory_required[:, k], settings, may_increase, may_decrease, cpu_moves
        )
        moved = cpu_moves | ~np.isclose(new_memory, memory, equal_nan=True)
        changed[:, k] = moved & ~(np.isnan(cpu) & np.isnan(memory))
        cpu, memory = new_cpu, new_memory
        cpu_out[:, k], memory_out[:, k] = cpu, memory
    return cpu_out, memory_out
