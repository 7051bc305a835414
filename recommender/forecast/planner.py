"""From a usage history to the requests each coming block needs.

One pass vectorised over all series: block means -> shape -> forecast candidates -> the
model whose past errors cost the least margin -> the fleet's shortfall target -> margins
per CPU state, replayed on the update policy and allocated across the fleet -> required
CPU per coming block; memory per CPU state. It reads only the history it is given, so
nothing after `now` can influence a plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from recommender.data.arrays import UsageArrays
from recommender.forecast.blocks import BlockLayout, KnownLevels, as_blocks, layout_for
from recommender.forecast.holtwinters import SmoothingParams, fit
from recommender.forecast.margins import (
    LEVEL_EDGES,
    Calibration,
    block_states,
    calibrate,
    level_bins,
)
from recommender.forecast.memory import MemoryPlan, OomHistory, plan_memory
from recommender.forecast.midblock import idle_requests, lull_shortfall_rate
from recommender.forecast.parity import parity_target, vpa_rate
from recommender.forecast.quantiles import error_quantiles, gapless_max, gapless_mean
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


def _cheapest_model(usage: np.ndarray, forecasts: np.ndarray, target: float) -> np.ndarray:
    """Per series, the one-step forecast whose calibrated request would have left the
    least slack: forecast + q (q the (1 - target) quantile of the errors) leaves on
    average q - mean(error) above usage."""
    n, models, _ = forecasts.shape
    score = np.full((n, models), np.inf)
    for m in range(models):
        errors = (usage - forecasts[:, m, :, None]).reshape(n, -1)
        quantile, count = error_quantiles(errors, (1.0 - target,))
        slack = quantile[:, 0] - gapless_mean(errors, axis=1)
        score[:, m] = np.where(count >= MIN_MODEL_ERRORS, slack, np.inf)
    return np.argmin(score, axis=1)  # no model judged: all inf, the first (Holt-Winters)


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


@dataclass(frozen=True)
class _History:
    """What every step of a plan reads: the usage on its block grid, its recent part
    (what margins and shapes are judged on) and the coming blocks."""

    usage: UsageArrays
    settings: ForecastSettings
    layout: BlockLayout
    cpu_blocks: np.ndarray  # (series, blocks, windows per block)
    blocks: np.ndarray  # (series, blocks) block means
    recent_cpu: np.ndarray  # (series, windows) of the last `residual_days`
    residual_blocks: int
    scale: np.ndarray  # (series,) the recent peak (1 where there is none): levels are shares of it
    first_block: int
    horizon: int

    @classmethod
    def of(cls, usage: UsageArrays, settings: ForecastSettings, now: int) -> _History:
        per_block = settings.windows_per_block(usage.step)
        layout = layout_for(usage.start, usage.step, usage.n_windows, per_block)
        cpu_blocks = as_blocks(usage.cpu, layout)
        blocks = gapless_mean(cpu_blocks, axis=2)
        residual_windows = max(1, round(settings.residual_days * DAY / usage.step))
        recent_cpu = usage.cpu[:, -residual_windows:]
        peak = gapless_max(recent_cpu)
        return cls(
            usage, settings, layout, cpu_blocks, blocks, recent_cpu,
            residual_blocks=max(1, residual_windows // per_block),
            scale=np.where(np.isfinite(peak) & (peak > 0), peak, 1.0),
            first_block=math.ceil(now / layout.period),
            horizon=settings.blocks_per(settings.horizon_seconds),
        )  # fmt: skip

    def shortfall_target(self, batch: np.ndarray) -> float:
        """The target the margins spend: the fleet's shortfall budget less what lull
        following's job starts will spend (see `midblock`)."""
        s = self.settings
        target = s.target_cpu_shortfall
        if s.cpu_shortfall_mode == "vpa":
            rate = vpa_rate(self.usage.cpu, self.usage.step)
            target = parity_target(
                rate, s.vpa_parity_factor, s.target_cpu_shortfall, s.max_container_shortfall
            )
        if s.lulls.follow:
            windows_per_start = s.reactions.react_after_windows
            lulls = lull_shortfall_rate(self.recent_cpu, self.scale, batch, windows_per_start)
            target = max(s.target_cpu_shortfall * s.lulls.target_floor, target - lulls)
        return target

    def forecasts(
        self, shape: ShapeReport, target: float, levels: KnownLevels | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(one-step forecasts of the past blocks, forecast of the horizon, model, alpha) of
        each series' model: of Holt-Winters candidates and persistence, the one whose recent
        errors cost the least margin; `levels` (the perfect reference) replace both."""
        m, usage, residual = self.settings.model, self.usage, self.residual_blocks
        params = SmoothingParams(m.level_alphas, m.trend_beta, m.season_gamma, m.trend_damping)
        candidates = fit(self.blocks, self.layout.block_ids, shape.period, params)
        persist = np.full(self.blocks.shape, np.nan)  # the last windows of the block before
        persist[:, 1:] = gapless_mean(self.cpu_blocks[:, :-1, -m.persistence_windows :], axis=2)
        options = np.concatenate([candidates.one_step, persist[:, None]], axis=1)
        choice = _cheapest_model(self.cpu_blocks[:, -residual:], options[:, :, -residual:], target)
        use_persist = choice == options.shape[1] - 1
        hw = candidates.pick(np.minimum(choice, options.shape[1] - 2))
        one_step = options[np.arange(usage.n_series), choice]
        latest = gapless_mean(usage.cpu[:, -m.persistence_windows :], axis=1)
        smoothed = hw.forecast(self.first_block, self.horizon)
        forecast = np.where(use_persist[:, None], latest[:, None], smoothed)
        model = np.where(use_persist, "persistence", "holt-winters")
        if levels is not None:
            if levels.period != self.layout.period or len(levels.keys) != usage.n_series:
                raise ValueError(
                    "the known levels are on another block grid or series than the plan"
                )
            past_known = levels.lookup(self.layout.block_ids)
            coming_known = levels.lookup(self.first_block + np.arange(self.horizon, dtype=np.int64))
            one_step = np.where(np.isnan(past_known), one_step, past_known)
            forecast = np.where(np.isnan(coming_known), forecast, coming_known)
            model = np.full(usage.n_series, "known levels")
        return one_step, np.maximum(forecast, 0.0), model, hw.alpha

    def calibrated(
        self, one_step: np.ndarray, forecast: np.ndarray, target: float
    ) -> tuple[Calibration, np.ndarray]:
        """The margins calibrated on the recent blocks' states (`margins.calibrate`), and the
        state of every coming block."""
        s, scale = self.settings, self.scale
        busy_blocks = max(1, s.blocks_per(s.reactions.busy_lookback_hours * HOUR))
        past_busy, future_busy = _recently_busy(self.cpu_blocks, scale, busy_blocks, self.horizon)
        past_states = block_states(one_step, past_busy, scale)
        recent = slice(-self.residual_blocks, None)
        calibration = calibrate(
            self.cpu_blocks[:, recent], one_step[:, recent], past_states[:, recent], scale,
            target, s.max_container_shortfall, s.reactions, DAY / self.layout.period,
        )  # fmt: skip
        return calibration, block_states(forecast, future_busy, scale)

    def cpu_required(
        self, forecast: np.ndarray, margin: np.ndarray, batch: np.ndarray, ceiling: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(required, the margin used): forecast + margin per block, a fallback where no
        margin is known, the batch ceiling and the floor."""
        s, usage = self.settings, self.usage
        mean_sized = batch & (s.batch_cpu_sizing == "mean")
        use_margin = np.where(mean_sized[:, None], 0.0, np.maximum(margin, 0.0))
        required = forecast + use_margin
        if np.isnan(margin).any():
            fallback = _fallback_cpu(self.recent_cpu, s)
            # a series with no sample in the recent window (a pod gone quiet) falls back
            # on all the history it has, instead of planning nothing
            quiet = np.isnan(fallback)
            if quiet.any():
                fallback[quiet] = _fallback_cpu(usage.cpu[quiet], s)
            required = np.where(np.isnan(margin), fallback[:, None], required)
        # an on/off job runs at its own ceiling: a batch request never needs to exceed it
        required = np.fmin(required, ceiling[:, None])
        required = np.maximum(required, s.min_cpu_cores)
        required[np.all(np.isnan(usage.cpu), axis=1)] = np.nan
        return required, use_margin


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
    now = usage.start + usage.n_windows * usage.step if now is None else now
    h = _History.of(usage, settings, now)
    period, first_block, horizon = h.layout.period, h.first_block, h.horizon
    shape = detect_shape(h.recent_cpu, h.blocks, period, settings)
    target = h.shortfall_target(shape.batch)
    one_step, forecast, model, alpha = h.forecasts(shape, target, levels)
    calibration, future_states = h.calibrated(one_step, forecast, target)
    margin = calibration.margin_for(future_states)
    ceiling = np.where(shape.batch, h.scale * (1.0 + settings.batch_peak_margin), np.nan)
    required, use_margin = h.cpu_required(forecast, margin, shape.batch, ceiling)
    grid_cpu = h.cpu_blocks.reshape(usage.n_series, -1)
    memory = plan_memory(
        as_blocks(usage.memory, h.layout).reshape(usage.n_series, -1),
        np.where(np.isnan(grid_cpu), -1, level_bins(grid_cpu, calibration.scale)),
        level_bins(forecast, calibration.scale), h.layout.windows_per_block, ooms,
        (first_block + np.arange(horizon)) * period, float(now), settings,
        None if previous is None else previous.memory.by_state,
    )  # fmt: skip
    idle = idle_requests(
        h.recent_cpu, h.scale, settings.lulls.idle_quantile, settings.reactions.react_margin,
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
