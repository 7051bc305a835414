"""From a usage history to the requests each coming block needs.

One pass, vectorised over all series: block means -> shape detection -> Holt-
Winters with the detected cycle -> one-step errors of the past -> conformal
margin -> required CPU per future block; memory from peaks and OOM history. The
strategy calls it at every block boundary with what it has seen so far; the
batch API calls it once on the whole history. It only ever reads the history it
is given, so nothing after `now` can influence a plan.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from recommender.data.arrays import UsageArrays
from recommender.forecast.blocks import block_mean, layout_for
from recommender.forecast.holtwinters import HoltWintersFit, SmoothingParams, fit
from recommender.forecast.margins import conformal_margin, upper_quantile, window_errors
from recommender.forecast.memory import OomHistory, memory_level, recent_peak
from recommender.forecast.settings import DAY, HOUR, ForecastSettings
from recommender.forecast.shape import ShapeReport, detect_shape


@dataclass(frozen=True)
class Plan:
    """Required requests per coming block, plus what explains them.

    Block arrays are (series, horizon blocks); block k starts at
    (first_block + k) * period UNIX seconds.
    """

    first_block: int
    period: int
    cpu_forecast: np.ndarray  # forecast mean usage per block, cores
    cpu_required: np.ndarray  # request covering the forecast at the target shortfall
    memory_required: np.ndarray  # memory request (= limit), bytes; NaN = no memory data
    cpu_margin: np.ndarray  # (series,) cores added to the forecast
    margin_errors: np.ndarray  # (series,) past errors the margin came from (0 = fallback)
    alpha: np.ndarray  # (series,) level smoothing in use
    shape: ShapeReport
    memory_peak: np.ndarray  # (series,) peak over the memory look-back, bytes
    oom_floor: np.ndarray  # (series,) floor set by OOM kills, bytes (0 = none)

    @property
    def horizon(self) -> int:
        return int(self.cpu_required.shape[1])

    def block_starts(self) -> np.ndarray:
        """UNIX seconds at which each horizon block starts, int64 (horizon,)."""
        return (self.first_block + np.arange(self.horizon, dtype=np.int64)) * self.period


def _fallback_cpu(cpu: np.ndarray, settings: ForecastSettings) -> np.ndarray:
    """Without enough past errors: a high quantile of what was seen, plus headroom."""
    level = 1.0 - settings.target_cpu_shortfall
    seen, _ = upper_quantile(cpu, level)
    return seen * (1.0 + settings.react_margin)


def make_plan(
    usage: UsageArrays, ooms: OomHistory, settings: ForecastSettings, now: int | None = None
) -> Plan:
    """Plan the next horizon of blocks for every series of `usage`.

    `now` (UNIX seconds) defaults to the end of the last window; the plan starts at
    the first block boundary at or after it.
    """
    step = usage.step
    end = usage.start + usage.n_windows * step
    now = end if now is None else now
    per_block = settings.windows_per_block(step)
    layout = layout_for(usage.start, step, usage.n_windows, per_block)
    period = layout.period
    blocks = block_mean(usage.cpu, layout)
    residual_windows = max(1, round(settings.residual_days * DAY / step))
    recent_cpu = usage.cpu[:, -residual_windows:]
    shape = detect_shape(recent_cpu, blocks, period, settings)
    params = SmoothingParams(
        settings.level_alphas, settings.trend_beta, settings.season_gamma, settings.trend_damping
    )
    residual_blocks = max(1, residual_windows // per_block)
    hw: HoltWintersFit = fit(blocks, layout.block_ids, shape.period, params, residual_blocks)
    errors = window_errors(usage.cpu, hw.one_step, layout.block_of_window())
    margin, count = conformal_margin(errors, settings.target_cpu_shortfall, residual_windows)
    first_block = math.ceil(now / period)
    horizon = settings.blocks_per(settings.horizon_seconds)
    forecast = np.maximum(hw.forecast(first_block, horizon), 0.0)
    use_margin = np.where(
        shape.batch & (settings.batch_cpu_sizing == "mean"), 0.0, np.maximum(margin, 0.0)
    )
    required = forecast + use_margin[:, None]
    fallback = _fallback_cpu(recent_cpu, settings)
    required = np.where(np.isnan(margin)[:, None], fallback[:, None], required)
    required = np.maximum(required, settings.min_cpu_cores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        no_cpu = np.all(np.isnan(usage.cpu), axis=1)
    required[no_cpu] = np.nan
    memory = memory_level(usage.memory, step, float(now), ooms, settings)
    memory_required = np.repeat(memory[:, None], horizon, axis=1)
    starts = (first_block + np.arange(horizon)) * period
    holding = ooms.floor[:, None] * (ooms.hold_until[:, None] > starts[None, :])
    peak_part = recent_peak(usage.memory, max(1, round(settings.memory_peak_hours * HOUR / step)))
    after_hold = np.fmax(peak_part * (1.0 + settings.memory_margin), settings.min_memory_bytes)
    memory_required = np.where(holding > 0, np.fmax(after_hold[:, None], holding), memory_required)
    memory_required = np.where(np.isnan(memory)[:, None], np.nan, memory_required)
    return Plan(
        first_block=first_block,
        period=period,
        cpu_forecast=forecast,
        cpu_required=required,
        memory_required=memory_required,
        cpu_margin=np.where(np.isnan(margin), np.nan, use_margin),
        margin_errors=np.where(np.isnan(margin), 0, count),
        alpha=hw.alpha,
        shape=shape,
        memory_peak=peak_part,
        oom_floor=ooms.floor_at(float(now)),
    )
