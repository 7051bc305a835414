"""Hysteresis: turning per-block requirements into requests that change rarely.

Every change is a resize on a live pod, so a request moves only when it matters: up as
soon as the coming block needs clearly more, down only when the next few blocks all need
clearly less; the new level covers those blocks, so a ramp costs one change, not one per
block.
"""

from __future__ import annotations

import numpy as np

from recommender.forecast.quantiles import gapless_max
from recommender.forecast.settings import ForecastSettings

MEMORY_ALONE_DECREASE = 0.3  # a memory-only resize down must cut the limit by this share


def cover(required: np.ndarray, blocks: int) -> np.ndarray:
    """Highest requirement of the first `blocks` columns, NaN-aware: (series,)."""
    peak = gapless_max(required[:, : max(1, blocks)])
    return np.where(np.isneginf(peak), np.nan, peak)


def cpu_step(
    current: np.ndarray,
    required: np.ndarray,
    settings: ForecastSettings,
    may_increase: np.ndarray,
    may_decrease: np.ndarray,
) -> np.ndarray:
    """The CPU request for the coming block from `current` (NaN = none yet) and the
    `required` of the blocks ahead, as far as the change budget allows (`may_...`)."""
    now = required[:, 0]
    level = cover(required, settings.hysteresis.cover_blocks)
    unset = np.isnan(current) & ~np.isnan(level)
    up = may_increase & (now > current * (1.0 + settings.hysteresis.increase_threshold))
    down = may_decrease & (level < current * (1.0 - settings.hysteresis.decrease_threshold))
    return np.where(unset | up | down, level, current)


def kept_above_usage(
    planned: np.ndarray, current: np.ndarray, usage: np.ndarray, settings: ForecastSettings
) -> np.ndarray:
    """A cut never goes below what the container is using right now (+ the reaction
    margin), nor, for that reason, above the request in force."""
    below = (usage > planned) & (planned < current)
    using = usage * (1.0 + settings.reactions.react_margin)
    return np.where(below, np.fmin(current, np.fmax(planned, using)), planned)


def cut_worth_making(
    planned: np.ndarray,
    current: np.ndarray,
    usage: np.ndarray,
    scale: np.ndarray,
    settings: ForecastSettings,
) -> np.ndarray:
    """A boundary's planned CPU as made (by the strategy and the published schedule): a
    cut never below the `usage` right now, and none that saves less than
    `min_decrease_share` of the recent peak `scale` (not worth a resize)."""
    planned = kept_above_usage(planned, current, usage, settings)
    small = current - planned < settings.hysteresis.min_decrease_share * scale
    return np.where((planned < current) & small, current, planned)


def ride_with_memory(
    cpu: np.ndarray,
    required: np.ndarray,
    settings: ForecastSettings,
    resized: np.ndarray,
    usage: np.ndarray,
    clearly: np.ndarray,
    follows_plan: np.ndarray,
) -> np.ndarray:
    """CPU for series whose memory is `resized` anyway (an OOM kill's bump, a rise): the
    resize is a change, so CPU rides along, up to the last `usage` + the reaction margin
    when that was `clearly` above the request (one resize, not a reaction later), else,
    where it `follows_plan`, to the plan's level with the boundary's thresholds (kills
    spend a young container's budget, leaving its CPU where the plan no longer wants it).
    """
    if not resized.any():
        return cpu
    short = resized & (usage > cpu + clearly)
    raised = np.where(short, np.fmax(cpu, usage * (1.0 + settings.reactions.react_margin)), cpu)
    alone = resized & ~short & follows_plan
    planned = cpu_step(raised, required, settings, alone, alone)
    return kept_above_usage(planned, raised, usage, settings)


def memory_step(
    current: np.ndarray,
    needed: np.ndarray,
    settings: ForecastSettings,
    may_rise: np.ndarray,
    may_fall: np.ndarray,
    riding: np.ndarray,
    held: np.ndarray,
) -> np.ndarray:
    """The memory request (= limit) at a block boundary: up as soon as the need eats into
    half the headroom (`may_rise`); down alone only by `MEMORY_ALONE_DECREASE` (`may_fall`)
    and never during an OOM hold (`held`); to the need whenever CPU is resized anyway
    (`riding`, down only outside a hold): one resize for both."""
    known = ~np.isnan(needed)
    unset = np.isnan(current) & known
    up = may_rise & (needed > current * (1.0 + settings.memory_margin / 2.0))
    alone_down = may_fall & ~held & (needed < current * (1.0 - MEMORY_ALONE_DECREASE))
    along = riding & known & ((needed > current) | ~held)
    return np.where(unset | up | alone_down | along, needed, current)
