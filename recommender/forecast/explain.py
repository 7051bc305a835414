"""Every recommendation says why: which shape was found, which margin, what the OOMs did.

One short sentence per container built from the plan's arrays, plus the same
facts as columns for machines (dashboards, the CLI's JSON output).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.forecast.memory import OomHistory, capped_state_peaks
from recommender.forecast.planner import Plan
from recommender.forecast.settings import DAY, ForecastSettings

GIB = 2.0**30
MIB = 2.0**20
STATE_NAMES = ("idle", "part-busy", "busy", "idle after busy")
LOWER_BY = 0.01  # a state this much under the peak is sized on its own (else: the peak)


def _cores(value: float) -> str:
    return f"{value * 1000:.0f}m" if value < 1 else f"{value:.2f}"


def _size(value: float) -> str:
    """GiB with two decimals, or whole MiB under 1 GiB (where 0.05 GiB says too little)."""
    if abs(value) < GIB:
        return f"{value / MIB:.0f} MiB"
    return f"{value / GIB:.2f} GiB"


def _utc(seconds: float) -> str:
    return pd.Timestamp(seconds, unit="s", tz="UTC").strftime("%Y-%m-%d %H:%M UTC")


def explanation_columns(plan: Plan, ooms: OomHistory, settings: ForecastSettings) -> pd.DataFrame:
    """Machine-readable reasons, one row per series."""
    day_blocks = max(1, round(DAY / plan.period))
    shape = plan.shape
    first_state = plan.cpu_states[:, 0]
    young = np.isnan(plan.cpu_margin[:, 0])
    return pd.DataFrame(
        {
            "season": shape.season_name(day_blocks),
            "workload_class": shape.workload_class(),
            "daily_acf": shape.daily_acf,
            "weekly_acf": shape.weekly_acf,
            "trend_per_day": shape.trend_per_day,
            "burstiness": shape.burstiness,
            "model": plan.model,
            "alpha": np.where(plan.model == "holt-winters", plan.alpha, np.nan),
            "cpu_state": np.asarray(STATE_NAMES, dtype=object)[first_state],
            "cpu_margin": plan.cpu_margin[:, 0],
            # a young series has no margin: its request is a quantile of what it used
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


def _cpu_sentence(
    plan: Plan, i: int, seasons: np.ndarray, kinds: np.ndarray, settings: ForecastSettings
) -> str:
    shape = plan.shape
    season = seasons[i]
    kind = kinds[i]
    if season == "none":
        found = "no cycle (stationary)"
    else:
        acf = shape.daily_acf[i] if season == "daily" else shape.weekly_acf[i]
        found = f"{season} cycle (autocorrelation {acf:.2f})"
    if plan.model[i] == "known levels":
        model = "forecast = each block's true mean (hindsight reference)"
    elif plan.model[i] == "persistence":
        model = "forecast = latest windows (switches state and stays)"
    else:
        model = f"Holt-Winters level smoothing {plan.alpha[i]:.2f}"
    state = int(plan.cpu_states[i, 0])
    margin = plan.cpu_margin[i, 0]
    if np.isnan(margin):
        sizing = (
            "too little history for a margin: "
            f"P{(1.0 - settings.target_cpu_shortfall) * 100:g} of what was seen "
            f"+{settings.reactions.react_margin:.0%} headroom"
        )
    else:
        level = plan.calibration.level[i, state]
        sizing = (
            f"margin +{_cores(float(margin))} cores in state {STATE_NAMES[state]} "
            f"(P{level * 100:g} of its recent errors; fleet shortfall target "
            f"{plan.shortfall_target:.2%})"
        )
    return f"cpu: {found}, {kind}; {model}; {sizing}"


def _memory_sentence(plan: Plan, ooms: OomHistory, i: int, settings: ForecastSettings) -> str:
    mp = plan.memory
    if np.isnan(mp.peak[i]):
        return "memory: not measured"
    margin = f"+{settings.memory_margin:.0%}"
    per_state = capped_state_peaks(mp.state_peak[i], mp.peak[i])  # what the plan sizes on
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


_MEMORY_JOIN = ". memory: "  # between the CPU sentence and the memory one


def explain(plan: Plan, ooms: OomHistory, settings: ForecastSettings) -> list[str]:
    """One sentence per series: shape, model, margin, memory rule and OOM history."""
    day_blocks = max(1, round(DAY / plan.period))
    seasons = plan.shape.season_name(day_blocks)
    kinds = plan.shape.workload_class()
    return [
        f"{_cpu_sentence(plan, i, seasons, kinds, settings)}. "
        f"{_memory_sentence(plan, ooms, i, settings)}."
        for i in range(plan.cpu_required.shape[0])
    ]


def with_memory_of(cpu_said: str, memory_said: str) -> str:
    """One explanation from two series' (`explain`): the CPU sentence of the first, the
    memory sentence of the second, for a workload whose CPU and memory figures come from
    different pods; the first unchanged when either lacks a memory sentence."""
    cpu_part, found, _ = cpu_said.partition(_MEMORY_JOIN)
    _, has_memory, memory_part = memory_said.partition(_MEMORY_JOIN)
    return cpu_part + _MEMORY_JOIN + memory_part if found and has_memory else cpu_said
