"""What a backtest returns: fleet-wide metrics per strategy plus per-container detail."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from recommender.backtest.history import ReplayHistory
from recommender.backtest.metrics import METRIC_NAMES, BlockMetrics, per_container, summarize

BASELINE = "vpa"


def _plain(value: float) -> float | None:
    """JSON has no NaN: undefined metrics (e.g. memory on CPU-only data) become null."""
    return None if value is None or math.isnan(value) else float(value)


@dataclass(frozen=True)
class BacktestResult:
    """Metrics of every strategy over the same containers and windows.

    containers: containers with at least one evaluated window (after warm-up).
    container_days: their sampled days after warm-up.
    summary: strategy -> metric name -> value (NaN where undefined).
    per_container: one row per (strategy, container): keys, summed raw figures
        and every metric for that container alone.
    per_container_day: one row per (strategy, container, day) behind the
        changes distribution and Autopilot's job-day slack.
    frontiers: with `--frontier`, strategy -> every point of its grid (the metrics
        plus `setting`, the knob values; see `recommender.backtest.frontier`).
    readings: strategy -> vpa's default risks and the slack read off its frontier there.
    budget_readings: with `--budgets`, strategy -> budget -> the same reading off the
        frontier of that budget's points alone.
    """

    containers: int
    container_days: float
    strategies: tuple[str, ...]
    summary: dict[str, dict[str, float]]
    per_container: pd.DataFrame
    per_container_day: pd.DataFrame
    step_seconds: int
    warm_up_seconds: int
    unevaluated_containers: int = 0
    ignored_events: int = 0
    elapsed_seconds: float = 0.0
    frontiers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    readings: dict[str, dict[str, float]] = field(default_factory=dict)
    budget_readings: dict[str, dict[int, dict[str, float]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract: containers, container_days, strategies -> metrics; with a
        frontier, each strategy's object also holds `frontier` (its points, each with
        `setting`) and `at_vpa_default` (slack read off it at vpa's default risks); with
        budgets swept, `at_vpa_default_per_budget` (the same per budget)."""
        strategies: dict[str, dict[str, Any]] = {}
        for name, values in self.summary.items():
            entry: dict[str, Any] = {metric: _plain(values[metric]) for metric in METRIC_NAMES}
            if name in self.frontiers:
                entry["frontier"] = [
                    {
                        **{metric: _plain(point[metric]) for metric in METRIC_NAMES},
                        "setting": point["setting"],
                    }
                    for point in self.frontiers[name]
                ]
            if name in self.readings:
                entry["at_vpa_default"] = {
                    key: _plain(value) for key, value in self.readings[name].items()
                }
            if name in self.budget_readings:
                entry["at_vpa_default_per_budget"] = {
                    str(budget): {key: _plain(value) for key, value in reading.items()}
                    for budget, reading in self.budget_readings[name].items()
                }
            strategies[name] = entry
        return {
            "containers": self.containers,
            "container_days": round(self.container_days, 6),
            "strategies": strategies,
        }

    def only(self, names: Sequence[str]) -> BacktestResult:
        """This result for the strategies `names` alone (in that order)."""
        keep = list(names)
        return replace(
            self,
            strategies=tuple(keep),
            summary={name: self.summary[name] for name in keep},
            per_container=self.per_container[self.per_container["strategy"].isin(keep)].reset_index(
                drop=True
            ),
            per_container_day=self.per_container_day[
                self.per_container_day["strategy"].isin(keep)
            ].reset_index(drop=True),
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def budget_rows(
        self, slacks: Sequence[str]
    ) -> list[tuple[int, str, list[tuple[float, float]]]]:
        """With `--budgets`, one row per (budget, slack): each budgeted strategy's reading
        (in `budget_readings` order) and its ratio to the baseline's own reading, NaN
        where either is missing. The table and the HTML report both show these."""
        budgets = sorted({budget for by in self.budget_readings.values() for budget in by})
        base = self.readings.get(BASELINE, {})
        rows = []
        for budget in budgets:
            for slack in slacks:
                cells = []
                for by in self.budget_readings.values():
                    value = by.get(budget, {}).get(slack, math.nan)
                    cells.append((value, value / base[slack] if base.get(slack) else math.nan))
                rows.append((budget, slack, cells))
        return rows

    def ratios(self, baseline: str = BASELINE) -> dict[str, dict[str, float]]:
        """Each strategy's metrics divided by the baseline's (NaN where undefined)."""
        if baseline not in self.summary:
            return {}
        base = self.summary[baseline]
        out: dict[str, dict[str, float]] = {}
        for name, values in self.summary.items():
            out[name] = {}
            for metric in METRIC_NAMES:
                denominator = base[metric]
                ok = denominator and not math.isnan(denominator)
                out[name][metric] = values[metric] / denominator if ok else float("nan")
        return out

    def summary_frame(self) -> pd.DataFrame:
        """Metrics as rows, strategies as columns."""
        return pd.DataFrame(self.summary).loc[list(METRIC_NAMES)]


def assemble(
    history: ReplayHistory,
    names: Sequence[str],
    outcomes: dict[tuple[str, int], BlockMetrics],
    step_seconds: int,
    warm_up_seconds: int,
    elapsed_seconds: float = 0.0,
) -> BacktestResult:
    """Combine per-block metrics (in a fixed order, so every engine agrees exactly)."""
    evaluated = history.evaluated
    keys = history.usage.keys
    summary: dict[str, dict[str, float]] = {}
    containers: list[pd.DataFrame] = []
    days: list[pd.DataFrame] = []
    for name in names:
        parts = [outcomes[key] for key in sorted(key for key in outcomes if key[0] == name)]
        sums = pd.concat([part.sums for part in parts], ignore_index=True)
        sums = sums.sort_values("row", kind="stable").reset_index(drop=True)
        sums = sums[evaluated[sums["row"].to_numpy()]].reset_index(drop=True)
        day_rows = pd.concat([part.days for part in parts], ignore_index=True)
        day_rows = day_rows.sort_values(["row", "day"], kind="stable").reset_index(drop=True)
        day_rows = day_rows[evaluated[day_rows["row"].to_numpy()]].reset_index(drop=True)
        summary[name] = summarize(sums, day_rows)
        detail = per_container(sums, day_rows)
        labels = keys.iloc[detail["row"].to_numpy()].reset_index(drop=True)
        containers.append(
            pd.concat(
                [pd.DataFrame({"strategy": name}, index=labels.index), labels, detail], axis=1
            )
        )
        days.append(day_rows.assign(strategy=name))
    return BacktestResult(
        containers=int(evaluated.sum()),
        container_days=history.container_days(),
        strategies=tuple(names),
        summary=summary,
        per_container=pd.concat(containers, ignore_index=True),
        per_container_day=pd.concat(days, ignore_index=True),
        step_seconds=step_seconds,
        warm_up_seconds=warm_up_seconds,
        unevaluated_containers=int((~evaluated).sum()),
        ignored_events=history.ignored_events,
        elapsed_seconds=elapsed_seconds,
    )


def representative_rows(
    result: BacktestResult, history: ReplayHistory, count: int = 3
) -> list[int]:
    """History rows worth plotting: the burstiest CPU, the most OOMs, the median footprint."""
    usage = history.usage
    evaluated = np.flatnonzero(history.evaluated)
    chosen: list[int] = []
    with np.errstate(invalid="ignore", divide="ignore"):
        cpu = usage.cpu[evaluated]
        spread = np.nanstd(cpu, axis=1) / np.nanmean(cpu, axis=1)
    if np.isfinite(spread).any():
        chosen.append(int(evaluated[np.nanargmax(np.where(np.isfinite(spread), spread, -1))]))
    ooms = result.per_container.groupby("row")["ooms"].sum()
    if not ooms.empty and ooms.max() > 0:
        chosen.append(int(ooms.index.to_numpy()[np.argmax(ooms.to_numpy())]))
    footprint = np.nanmean(usage.cpu[evaluated], axis=1)
    order = evaluated[np.argsort(footprint, kind="stable")]
    chosen.append(int(order[len(order) // 2]))
    unique = list(dict.fromkeys(chosen))
    for row in order[::-1].tolist():  # fill up with the largest containers
        if len(unique) >= min(count, len(order)):
            break
        if row not in unique:
            unique.append(int(row))
    return unique[:count]
