"""From a usage history to the requests each coming block needs.

One pass vectorised over all series: block means -> shape -> forecast candidates -> the
model whose past errors cost the least margin -> the fleet's shortfall target -> margins
per CPU state, replayed on the update policy and allocated across the fleet -> required
CPU per coming block; memory per CPU state. It reads only the history it is given, so
nothing after `now` can influence a plan.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from recommender.data.arrays import UsageArrays
from recommender.forecast.blocks import BlockLayout, as_blocks, layout_for
from recommender.forecast.holtwinters import SmoothingParams, fit
from recommender.forecast.levels import KnownLevels
from recommender.forecast.lulls import idle_requests, lull_shortfall_rate
from recommender.forecast.margins import (
    LEVEL_EDGES,
    Calibration,
    block_states,
    calibrate,
    level_bins,
)
from recommender.forecast.memory import MemoryPlan, OomHistory, plan_memory
from recommender.forecast.parity import parity_target, vpa_rate
from recommender.forecast.quantiles import error_quantiles, gapless_max
from recommender.forecast.settings import DAY, HOUR, ForecastSettings
from recommender.forecast.shape import ShapeReport, detect_shape


@dataclass(frozen=True)
class Plan:
    """Required requests per coming block, (series, horizon blocks) from `first_block`,
    plus what explains them."""

    first_block: int
    period: int
    cpu_forecast: np.ndarray  # forecast mean usage per block, cores
    cpu_states: np.ndarray  # state of each block (see margins.block_states)
    shortfall_target: float  # fleet CPU shortfall rate the margins were allocated for
    cpu_required: np.ndarray  # request covering the forecast at the target shortfall
    memory: MemoryPlan  # memory request (= limit) per block and why
    cpu_margin: np.ndarray  # (series, horizon) cores added to the forecast (NaN = fallback)
    cpu_idle: np.ndarray  # (series,) request while idle in a lull (NaN = never idle)
    cpu_ceiling: np.ndarray  # (series,) most a batch series' request needs (NaN = no cap)
    calibration: Calibration
    model: np.ndarray  # (series,) "holt-winters", "persistence" or "known levels"
    alpha: np.ndarray  # (series,) level smoothing in use
    shape: ShapeReport

    @property
    def horizon(self) -> int:
        return int(self.cpu_required.shape[1])

    def block_starts(self) -> np.ndarray:
        """UNIX seconds at which each horizon block starts, int64 (horizon,)."""
        return (self.first_block + np.arange(self.horizon, dtype=np.int64)) * self.period


MIN_MODEL_ERRORS = 12  # a model needs this many past errors to be judged


def _fallback_cpu(cpu: np.ndarray, settings: ForecastSettings) -> np.ndarray:
    """Without enough past errors: a high quantile of what was seen, plus headroom."""
    seen, _ = error_quantiles(cpu, (1.0 - settings.target_cpu_shortfall,))
    return seen[:, 0] * (1.0 + settings.reactions.react_margin)


def persistence_one_step(windows: np.ndarray, recent: int) -> np.ndarray:
    """Forecast of each block = mean of the last `recent` windows before it: batch jobs
    switch state and stay, so the latest windows beat a smoothed level after a switch."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tail = np.nanmean(windows[:, :, -recent:], axis=2)
    out = np.full(tail.shape, np.nan)
    out[:, 1:] = tail[:, :-1]
    return out


def _cheapest_model(usage: np.ndarray, forecasts: np.ndarray, target: float) -> np.ndarray:
    """Per series, the one-step forecast whose calibrated request would have left the
    least slack: forecast + q (q the (1 - target) quantile of the errors) leaves on
    average q - mean(error) above usage."""
    n, models, _ = forecasts.shape
    score = np.full((n, models), np.inf)
    for m in range(models):
        errors = (usage - forecasts[:, m, :, None]).reshape(n, -1)
        quantile, count = error_quantiles(errors, (1.0 - target,))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            slack = quantile[:, 0] - np.nanmean(errors, axis=1)
        score[:, m] = np.where(count >= MIN_MODEL_ERRORS, slack, np.inf)
    return np.argmin(score, axis=1)  # no model judged: all inf, the first (Holt-Winters)


def _recent_scale(cpu: np.ndarray) -> np.ndarray:
    """The recent peak of each series (1 where there is none): what levels are relative to."""
    peak = gapless_max(cpu)
    return np.where(np.isfinite(peak) & (peak > 0), peak, 1.0)


def _recently_busy(
    cpu_blocks: np.ndarray, scale: np.ndarray, lookback: int, horizon: int
) -> tuple[np.ndarray, np.ndarray]:
    """Whether the `lookback` blocks before each block held a busy window: (past blocks,
    horizon blocks); a horizon block knows only the history part of its look-back."""
    n, count, _ = cpu_blocks.shape
    busy = gapless_max(cpu_blocks, axis=2) >= LEVEL_EDGES[-1] * scale[:, None]
    extended = np.concatenate([busy, np.zeros((n, horizon), dtype=bool)], axis=1)
    before = np.zeros(extended.shape, dtype=bool)
    for back in range(1, lookback + 1):
        before[:, back:] |= extended[:, :-back]
    return before[:, :count], before[:, count:]


def _shortfall_target(
    usage: UsageArrays,
    recent_cpu: np.ndarray,
    scale: np.ndarray,
    batch: np.ndarray,
    settings: ForecastSettings,
) -> float:
    """The target the margins spend: the fleet's shortfall budget less what lull
    following's job starts will spend (see `lulls`)."""
    target = settings.target_cpu_shortfall
    if settings.cpu_shortfall_mode == "vpa":
        target = parity_target(
            vpa_rate(usage.cpu, usage.step),
            settings.vpa_parity_factor,
            settings.target_cpu_shortfall,
            settings.max_container_shortfall,
        )
    if settings.lulls.follow:
        lulls = lull_shortfall_rate(
            recent_cpu, scale, batch, settings.reactions.react_after_windows
        )
        target = max(settings.target_cpu_shortfall * settings.lulls.target_floor, target - lulls)
    return target


def _forecasts(
    usage: UsageArrays,
    cpu_blocks: np.ndarray,
    blocks: np.ndarray,
    layout: BlockLayout,
    shape: ShapeReport,
    target: float,
    first_block: int,
    horizon: int,
    residual_blocks: int,
    settings: ForecastSettings,
    levels: KnownLevels | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(one-step forecasts of the past blocks, forecast of the horizon, model, alpha) of
    each series' model: of Holt-Winters candidates and persistence, the one whose recent
    errors cost the least margin; `levels` (the perfect reference) replace both."""
    m = settings.model
    params = SmoothingParams(m.level_alphas, m.trend_beta, m.season_gamma, m.trend_damping)
    candidates = fit(blocks, layout.block_ids, shape.period, params)
    persist = persistence_one_step(cpu_blocks, m.persistence_windows)
    options = np.concatenate([candidates.one_step, persist[:, None]], axis=1)
    recent = cpu_blocks[:, -residual_blocks:]
    choice = _cheapest_model(recent, options[:, :, -residual_blocks:], target)
    use_persist = choice == options.shape[1] - 1
    hw = candidates.pick(np.minimum(choice, options.shape[1] - 2))
    one_step = options[np.arange(usage.n_series), choice]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        latest = np.nanmean(usage.cpu[:, -m.persistence_windows :], axis=1)
    forecast = np.where(use_persist[:, None], latest[:, None], hw.forecast(first_block, horizon))
    model = np.where(use_persist, "persistence", "holt-winters")
    if levels is not None:
        if levels.period != layout.period or len(levels.keys) != usage.n_series:
            raise ValueError("the known levels are on another block grid or series than the plan")
        past_known = levels.lookup(layout.block_ids)
        coming = levels.lookup(first_block + np.arange(horizon, dtype=np.int64))
        one_step = np.where(np.isnan(past_known), one_step, past_known)
        forecast = np.where(np.isnan(coming), forecast, coming)
        model = np.full(usage.n_series, "known levels")
    return one_step, np.maximum(forecast, 0.0), model, hw.alpha


def _cpu_required(
    forecast: np.ndarray,
    margin: np.ndarray,
    usage: UsageArrays,
    recent_cpu: np.ndarray,
    shape: ShapeReport,
    ceiling: np.ndarray,
    settings: ForecastSettings,
) -> tuple[np.ndarray, np.ndarray]:
    """(required, the margin used): forecast + margin per block, a fallback where no
    margin is known, the batch ceiling and the floor."""
    mean_sized = shape.batch & (settings.batch_cpu_sizing == "mean")
    use_margin = np.where(mean_sized[:, None], 0.0, np.maximum(margin, 0.0))
    required = forecast + use_margin
    if np.isnan(margin).any():
        fallback = _fallback_cpu(recent_cpu, settings)
        # a series with no sample in the recent window (a pod gone quiet) falls back
        # on all the history it has, instead of planning nothing
        quiet = np.isnan(fallback)
        if quiet.any():
            fallback[quiet] = _fallback_cpu(usage.cpu[quiet], settings)
        required = np.where(np.isnan(margin), fallback[:, None], required)
    # an on/off job runs at its own ceiling: a batch request never needs to exceed it
    required = np.fmin(required, ceiling[:, None])
    required = np.maximum(required, settings.min_cpu_cores)
    required[np.all(np.isnan(usage.cpu), axis=1)] = np.nan
    return required, use_margin


def _calibrated(
    cpu_blocks: np.ndarray,
    one_step: np.ndarray,
    forecast: np.ndarray,
    scale: np.ndarray,
    target: float,
    horizon: int,
    residual_blocks: int,
    period: int,
    settings: ForecastSettings,
) -> tuple[Calibration, np.ndarray]:
    """The margins calibrated on the recent blocks' states (`margins.calibrate`), and the
    state of every coming block."""  # fmt: skip
    busy_blocks = max(1, settings.blocks_per(settings.reactions.busy_lookback_hours * HOUR))
    past_busy, future_busy = _recently_busy(cpu_blocks, scale, busy_blocks, horizon)
    past_states = block_states(one_step, past_busy, scale)
    future_states = block_states(forecast, future_busy, scale)
    recent = slice(-residual_blocks, None)
    calibration = calibrate(
        cpu_blocks[:, recent], one_step[:, recent], past_states[:, recent], scale, target,
        settings.max_container_shortfall, settings.reactions, DAY / period,
    )  # fmt: skip
    return calibration, future_states


def make_plan(
    usage: UsageArrays,
    ooms: OomHistory,
    settings: ForecastSettings,
    now: int | None = None,
    previous: Plan | None = None,
    levels: KnownLevels | None = None,
) -> Plan:
    """Plan the horizon from the first block boundary at or after `now` (default: the end
    of the history) for every series. `previous` (the last plan) keeps memory sizing
    stable; `levels` (the perfect reference) replace forecasts by true block means."""
    step = usage.step
    now = usage.start + usage.n_windows * step if now is None else now
    per_block = settings.windows_per_block(step)
    layout = layout_for(usage.start, step, usage.n_windows, per_block)
    period = layout.period
    cpu_blocks = as_blocks(usage.cpu, layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        blocks = np.nanmean(cpu_blocks, axis=2)
    residual_windows = max(1, round(settings.residual_days * DAY / step))
    residual_blocks = max(1, residual_windows // per_block)
    recent_cpu = usage.cpu[:, -residual_windows:]
    shape = detect_shape(recent_cpu, blocks, period, settings)
    first_block = math.ceil(now / period)
    horizon = settings.blocks_per(settings.horizon_seconds)
    scale = _recent_scale(recent_cpu)
    target = _shortfall_target(usage, recent_cpu, scale, shape.batch, settings)
    one_step, forecast, model, alpha = _forecasts(
        usage, cpu_blocks, blocks, layout, shape, target, first_block, horizon, residual_blocks,
        settings, levels,
    )  # fmt: skip
    calibration, future_states = _calibrated(
        cpu_blocks, one_step, forecast, scale, target, horizon, residual_blocks,
        period, settings,
    )  # fmt: skip
    margin = calibration.margin_for(future_states)
    ceiling = np.where(shape.batch, scale * (1.0 + settings.batch_peak_margin), np.nan)
    required, use_margin = _cpu_required(
        forecast, margin, usage, recent_cpu, shape, ceiling, settings
    )
    grid_cpu = cpu_blocks.reshape(usage.n_series, -1)
    memory = plan_memory(
        as_blocks(usage.memory, layout).reshape(usage.n_series, -1),
        np.where(np.isnan(grid_cpu), -1, level_bins(grid_cpu, calibration.scale)),
        level_bins(forecast, calibration.scale), per_block, ooms,
        (first_block + np.arange(horizon)) * period, float(now), settings,
        None if previous is None else previous.memory.by_state,
    )  # fmt: skip
    idle = idle_requests(
        recent_cpu, scale, settings.lulls.idle_quantile, settings.reactions.react_margin,
        settings.min_cpu_cores,
    )  # fmt: skip
    return Plan(
        first_block=first_block,
        period=period,
        cpu_forecast=forecast,
        cpu_states=future_states,
        shortfall_target=target,
        cpu_required=required,
        memory=memory,
        cpu_margin=np.where(np.isnan(margin), np.nan, use_margin),
        cpu_idle=idle,
        cpu_ceiling=ceiling,
        calibration=calibration,
        model=model,
        alpha=alpha,
        shape=shape,
    )
