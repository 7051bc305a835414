"""Conformal margins, calibrated on the update policy that will use them.

A request is forecast + margin, raised mid-block after a shortfall, so a series' margin
is chosen by replaying that policy over its own recent past, out of sample: among
quantiles of its past errors, the smallest that keeps the shortfall target within the
reactions the budget allows. Without reactions this is the split-conformal quantile;
with them, a job starting mid-block costs one window of shortfall, not an all-day margin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.forecast.allocation import Offer, allocate
from recommender.forecast.quantiles import grouped_quantiles
from recommender.forecast.settings import ReactionSettings

MIN_ERRORS = 12  # fewer past errors than this and a series has no margin of its own
# Quantile levels offered to the fleet allocation. A fine grid lets the single
# fleet price stop each series where its errors stop paying, not at a coarse step.
CANDIDATE_LEVELS = (
    *(0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.93, 0.94, 0.95, 0.955),
    *(0.96, 0.965, 0.97, 0.975, 0.98, 0.985, 0.99, 0.993, 0.995, 0.997, 0.999, 1.0),
)


@dataclass(frozen=True)
class Calibration:
    """Per-series, per-state margins and what their replay over the past achieved."""

    margin: np.ndarray  # cores above the forecast; NaN = too little history
    reactions_per_day: np.ndarray  # replayed mid-block raises per day
    level: np.ndarray  # quantile level of the chosen candidate
    scale: np.ndarray  # (series,) the recent peak the bins are relative to

    def margin_for(self, states: np.ndarray) -> np.ndarray:
        """The margin for blocks in these states: (series, blocks) like `states`."""
        return np.take_along_axis(self.margin, states, axis=1)


LEVEL_EDGES = (0.0, 0.2, 0.6)  # idle, part-busy, busy: forecast relative to the recent peak
STATES = 4  # the three levels, plus idle right after a busy spell
MIN_BIN_ERRORS = 120  # below this a state borrows the most cautious margin of the series


def level_bins(values: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Level bin (0 idle, 1 part-busy, 2 busy) of values relative to their series' scale."""
    bins = np.zeros(np.shape(values), dtype=np.int64)
    for edge in LEVEL_EDGES[1:]:
        bins += values >= (scale * edge)[:, None]  # NaN compares False: idle
    return bins


def block_states(forecast: np.ndarray, recently_busy: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """State of each block: its forecast's level bin, or 3 when idle right after a busy
    spell: jobs come in bursts, so that idle state gets a margin of its own."""
    bins = level_bins(forecast, scale)
    return np.where((bins == 0) & recently_busy, STATES - 1, bins)


def replay_margins(
    usage: np.ndarray,
    forecast: np.ndarray,
    margins: np.ndarray,
    rule: ReactionSettings,
    scale: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Shortfall windows and reactions per (series, candidate, block) of request =
    forecast + margin with mid-block reactions, replayed window by window (compiled:
    `recommender.kernels.replay`)."""
    from recommender.kernels.replay import replay  # numba: only when calibrating

    # float32 and C order (`margins` comes transposed); up: a tie is no shortfall
    request = np.nextafter(forecast[:, None, :] + margins, np.inf, dtype=np.float32, order="C")
    clearly = (rule.react_min_fraction * scale).astype(np.float32)
    values = np.nan_to_num(usage, nan=-np.inf).astype(np.float32, order="C")  # never short
    return replay(
        values, np.isnan(usage, order="C"), request, clearly, int(rule.react_after_windows),
        np.float32(1.0 + rule.react_margin),
    )  # fmt: skip


def calibrate(
    usage: np.ndarray,
    forecast: np.ndarray,
    states: np.ndarray,
    scale: np.ndarray,
    target_shortfall: float,
    container_cap: float,
    rule: ReactionSettings,
    blocks_per_day: float,
) -> Calibration:
    """Each series' margin per state, by replaying candidates (quantiles of that state's
    one-step errors: Mondrian conformal) over its past; `allocation.allocate` picks one
    per state so the fleet meets `target_shortfall`. A state with too few errors takes
    the most cautious margin the series has."""
    n = usage.shape[0]
    usable = np.where(np.isnan(forecast)[:, :, None], np.nan, usage)
    errors = (usable - forecast[:, :, None]).reshape(n, -1)
    per_window = np.repeat(states, usable.shape[2], axis=1)
    candidates, count = grouped_quantiles(errors, per_window, STATES, CANDIDATE_LEVELS)
    candidates = np.maximum(np.nan_to_num(candidates), 0.0)
    per_block_margin = np.take_along_axis(candidates, states[:, :, None], axis=1)  # (n, B, L)
    shortfalls, reactions = replay_margins(
        usable, np.nan_to_num(forecast), per_block_margin.transpose(0, 2, 1), rule, scale
    )
    windows = np.sum(~np.isnan(usable), axis=2)  # (n, B)
    days = np.maximum(np.sum(windows > 0, axis=1), 1) / blocks_per_day
    # sums over each state's blocks as one product with a 0/1 matrix: whole counts, so exact
    in_state = (states[:, :, None] == np.arange(STATES)).astype(np.float64)  # (n, B, states)
    short_count = np.matmul(shortfalls, in_state).transpose(0, 2, 1).copy()
    per_day = np.matmul(reactions, in_state).transpose(0, 2, 1) / days[:, None, None]
    bin_windows = np.matmul(windows[:, None, :].astype(np.float64), in_state)[:, 0]
    offer = Offer(
        cost=candidates * bin_windows[:, :, None],
        shortfalls=short_count,
        reactions=per_day,
        windows=bin_windows.sum(axis=1),
    )
    choice, _ = allocate(offer, target_shortfall, container_cap, rule.reactions_per_day)
    pick = choice[:, :, None]
    margin = np.take_along_axis(candidates, pick, axis=2)[:, :, 0]
    enough = count >= MIN_BIN_ERRORS
    fallback = np.max(np.where(enough, margin, -np.inf), axis=1, keepdims=True)
    margin = np.where(enough, margin, fallback)
    margin = np.where(np.isfinite(margin), margin, np.nan)
    margin[count.sum(axis=1) < MIN_ERRORS] = np.nan
    return Calibration(
        margin=margin,
        reactions_per_day=np.take_along_axis(per_day, pick, axis=2)[:, :, 0],
        level=np.asarray(CANDIDATE_LEVELS)[choice],
        scale=scale,
    )
