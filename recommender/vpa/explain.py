"""The upstream model's recommendation in words: which percentile, which margin, how much
history the confidence multipliers saw, and whether an OOM kill's bump moved memory.

The forecaster explains every recommendation (`recommender.explanations`); a user
comparing the two models with `tailor recommend --explain` wants the same from `vpa`,
so it is said from the model's own state and settings, numbers as the model used them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.vpa.estimators import confidence_factor
from recommender.vpa.model import VpaModel
from tailor.memory_pressure import MEMORY_PRESSURE

KEYS = ["namespace", "workload", "container"]


def _percent(value: float) -> str:
    return f"p{value * 100:g}"


def _history(days: float) -> str:
    hours = days * 24.0
    return f"{hours:.0f} h" if hours < 48 else f"{days:.1f} days"


def _factor(value: float) -> str:
    return "x inf" if not np.isfinite(value) else f"x{value:.2f}"


def oom_counts(
    events: pd.DataFrame | None, aggregates: pd.DataFrame, reason: str = "OOMKilled"
) -> np.ndarray:
    """OOM kills (or other events of `reason`) per aggregate (rows of `aggregates`) in a
    canonical events table."""
    if events is None or events.empty:
        return np.zeros(len(aggregates), dtype=np.int64)
    kills = events.loc[events["reason"] == reason, KEYS].astype(str)
    counts = kills.groupby(KEYS).size()
    index = pd.MultiIndex.from_frame(aggregates.loc[:, KEYS].astype(str))
    return counts.reindex(index).fillna(0).to_numpy(dtype=np.int64)


def vpa_explanations(
    model: VpaModel, aggregates: pd.DataFrame, events: pd.DataFrame | None = None
) -> list[str]:
    """One explanation per aggregate (row of `aggregates`, the model's order)."""
    s = model.settings
    cpu_days = model.confidence("cpu")
    memory_days = model.confidence("memory")
    kills = oom_counts(events, aggregates)
    episodes = oom_counts(events, aggregates, MEMORY_PRESSURE)  # counted as kills
    margin = f"+{s.safety_margin * 100:g}% margin"
    cpu_target, cpu_lower, cpu_upper = s.percentiles("cpu")
    memory_target, memory_lower, memory_upper = s.percentiles("memory")
    sentences = []
    for row in range(len(aggregates)):
        days = float(cpu_days[row])
        if not days > 0:
            sentences.append("vpa: no usage history yet; the pod minimum applies")
            continue
        upper = float(
            confidence_factor(
                np.array([days]), s.upper_confidence_multiplier, s.upper_confidence_exponent
            )[0]
        )
        lower = float(
            confidence_factor(
                np.array([days]), s.lower_confidence_multiplier, s.lower_confidence_exponent
            )[0]
        )
        bounds = f"{_percent(cpu_lower)}/{_percent(cpu_upper)}"
        if (memory_lower, memory_upper) != (cpu_lower, cpu_upper):
            bounds += f" (memory {_percent(memory_lower)}/{_percent(memory_upper)})"
        text = (
            f"vpa: cpu target {_percent(cpu_target)} of usage, memory target "
            f"{_percent(memory_target)} of daily peaks, {margin}; bounds {bounds} scaled by "
            f"confidence after {_history(days)} of history (as upstream counts it: the span, "
            f"at most one sample a minute): lower {_factor(lower)}, upper {_factor(upper)}"
        )
        if float(memory_days[row]) != days:
            text += f" (memory: {_history(float(memory_days[row]))})"
        if kills[row] or episodes[row]:
            said = [f"{kills[row]} OOM kill(s)"] if kills[row] else []
            if episodes[row]:
                said.append(f"{episodes[row]} memory-pressure episode(s) (as kills)")
            text += (
                f"; {' and '.join(said)} raised memory: each counts as a peak of "
                f"{s.oom_bump_ratio:g}x the memory at the kill, at least "
                f"+{s.oom_min_bump / 2**20:g}Mi"
            )
        sentences.append(text)
    return sentences
