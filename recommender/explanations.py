"""Every forecast recommendation says why: which shape, which margin, what the OOMs did.

The facts of each plan come as columns for machines (dashboards, the CLI's JSON output),
and the sentence a person reads is written from those same columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from recommender.data.arrays import KEY_COLUMNS
from recommender.forecast.api import Planned
from recommender.forecast.memory import OomHistory, capped_state_peaks
from recommender.forecast.planner import Plan
from recommender.forecast.settings import DAY, ForecastSettings
from recommender.forecast.shape import ShapeReport

STATE_NAMES = ("idle", "part-busy", "busy", "idle after busy")
BURSTY_RATIO = 3.0  # p99 / median of windows above which a serving container is bursty
LOWER_BY = 0.01  # a state this much under the peak is sized on its own (else: the peak)
MEMORY_JOIN = ". memory: "  # between the CPU sentence and the memory one
MODEL_SAID = {
    "known levels": "forecast = each block's true mean (hindsight reference)",
    "persistence": "forecast = latest windows (switches state and stays)",
}


def _cores(value: float) -> str:
    return f"{value * 1000:.0f}m" if value < 1 else f"{value:.2f}"


def _size(value: float) -> str:
    """GiB with two decimals, or whole MiB under 1 GiB (where 0.05 GiB says too little)."""
    return f"{value / 2**20:.0f} MiB" if abs(value) < 2**30 else f"{value / 2**30:.2f} GiB"


def _utc(seconds: float) -> str:
    return pd.Timestamp(seconds, unit="s", tz="UTC").strftime("%Y-%m-%d %H:%M UTC")


def season_name(shape: ShapeReport, day_blocks: int) -> np.ndarray:
    """'none', 'daily' or 'weekly' per series: the cycle the forecast uses."""
    names = np.full(shape.period.shape, "none", dtype=object)
    names[shape.period == day_blocks] = "daily"
    names[shape.period > day_blocks] = "weekly"
    return names


def workload_class(shape: ShapeReport) -> np.ndarray:
    """'batch', 'serving-bursty' or 'serving' per series (bursty: a label for people, no
    rule of the forecast reads it)."""
    names = np.full(shape.batch.shape, "serving", dtype=object)
    names[shape.burstiness > BURSTY_RATIO] = "serving-bursty"
    names[shape.batch] = "batch"
    return names


def reasons(plan: Plan, ooms: OomHistory, settings: ForecastSettings) -> pd.DataFrame:
    """Per series, the explanation (one sentence: shape, model, margin, memory rule and OOM
    history), then its facts as columns."""
    shape = plan.shape
    first_state = plan.cpu_states[:, 0]
    young = np.isnan(plan.cpu_margin[:, 0])  # no margin: a quantile of what it used
    facts = pd.DataFrame(
        {
            "season": season_name(shape, max(1, round(DAY / plan.period))),
            "workload_class": workload_class(shape),
            "daily_acf": shape.daily_acf,
            "weekly_acf": shape.weekly_acf,
            "trend_per_day": shape.trend_per_day,
            "burstiness": shape.burstiness,
            "model": plan.model,
            "alpha": np.where(plan.model == "holt-winters", plan.alpha, np.nan),
            "cpu_state": np.asarray(STATE_NAMES, dtype=object)[first_state],
            "cpu_margin": plan.cpu_margin[:, 0],
            "cpu_margin_quantile": np.where(
                young,
                np.nan,
                np.take_along_axis(plan.calibration.level, first_state[:, None], axis=1)[:, 0],
            ),
            "cpu_seen_quantile": np.where(young, 1.0 - settings.target_cpu_shortfall, np.nan),
            "shortfall_target": plan.shortfall_target,
            "memory_by_cpu_state": plan.memory.by_state,
            "memory_peak": plan.memory.peak,
            "oom_kills": ooms.count,
            "oom_floor": plan.memory.floor,
        }
    )
    # per series, its state peaks capped at its recent peak, for the memory sentences
    sized_on = capped_state_peaks(plan.memory.state_peak, plan.memory.peak)
    said = [
        f"{_cpu_sentence(row, settings)}. {_memory_sentence(plan, ooms, i, peaks, settings)}."
        for i, (row, peaks) in enumerate(zip(facts.itertuples(), sized_on, strict=True))
    ]
    facts.insert(0, "explanation", said)
    return facts


def planned_reasons(
    planned: Planned, keys: pd.DataFrame, settings: ForecastSettings
) -> pd.DataFrame:
    """`reasons` of every series of `planned`, after its KEY_COLUMNS (from `keys`)."""
    parts = [reasons(plan, planned.ooms.select(rows), settings) for rows, plan in planned.plans]
    keyed = keys.loc[:, list(KEY_COLUMNS)].reset_index(drop=True)
    return pd.concat([keyed, pd.concat(parts, ignore_index=True)], axis=1)


def _cpu_sentence(row: Any, settings: ForecastSettings) -> str:
    if row.season == "none":
        found = "no cycle (stationary)"
    else:
        acf = row.daily_acf if row.season == "daily" else row.weekly_acf
        found = f"{row.season} cycle (autocorrelation {acf:.2f})"
    model = MODEL_SAID.get(row.model, f"Holt-Winters level smoothing {row.alpha:.2f}")
    if np.isnan(row.cpu_margin):
        sizing = (
            "too little history for a margin: "
            f"P{(1.0 - settings.target_cpu_shortfall) * 100:g} of what was seen "
            f"+{settings.reactions.react_margin:.0%} headroom"
        )
    else:
        sizing = (
            f"margin +{_cores(float(row.cpu_margin))} cores in state {row.cpu_state} "
            f"(P{row.cpu_margin_quantile * 100:g} of its recent errors; fleet shortfall "
            f"target {row.shortfall_target:.2%})"
        )
    return f"cpu: {found}, {row.workload_class}; {model}; {sizing}"


def _memory_sentence(
    plan: Plan, ooms: OomHistory, i: int, per_state: np.ndarray, settings: ForecastSettings
) -> str:
    """Series `i`'s memory sentence; `per_state`: its state peaks as the plan sizes on them."""
    mp = plan.memory
    if np.isnan(mp.peak[i]):
        return "memory: not measured"
    margin = f"+{settings.memory_margin:.0%}"
    # sized per state only where some state is clearly lower (NaN, a state never seen, is not)
    if mp.by_state[i] and np.any(per_state < (1.0 - LOWER_BY) * mp.peak[i]):
        levels = ", ".join(
            f"{name} {_size(float(v))}"
            for name, v in zip(STATE_NAMES, per_state, strict=False)
            if not np.isnan(v)
        )
        sized = (
            f"sized per CPU state ({levels}) {margin}, replayed at"
            f" {mp.extra_oom_per_day[i]:+.2f} kills/day for {_size(float(mp.state_saving[i]))}"
            " less on average"
        )
    else:
        sized = f"covers the peak of the remembered history {_size(float(mp.peak[i]))} {margin}"
    text = f"memory: {sized}"
    if ooms.count[i]:
        text += f"; {ooms.count[i]} OOM kill(s), last {_utc(float(ooms.last[i]))}"
        if mp.floor[i] > 0:
            text += f", limit held >= {_size(float(mp.floor[i]))} until {_utc(ooms.hold_until[i])}"
    return text


def with_memory_of(cpu_said: str, memory_said: str) -> str:
    """One explanation from two series' (`reasons`): the CPU sentence of the first, the
    memory sentence of the second, for a workload whose CPU and memory figures come from
    different pods; the first unchanged when either lacks a memory sentence."""
    cpu_part, found, _ = cpu_said.partition(MEMORY_JOIN)
    _, has_memory, memory_part = memory_said.partition(MEMORY_JOIN)
    return cpu_part + MEMORY_JOIN + memory_part if found and has_memory else cpu_said
