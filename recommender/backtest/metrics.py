"""The backtest metrics of backtest-metrics.md, per container and over a fleet.

A window counts for a strategy when it lies after the container's warm-up,
has a sample, and the strategy has a request in force for that resource. CPU
figures use windows with a CPU sample, memory figures windows with a memory
sample (CPU-only data leaves the memory figures NaN). Footprints are the
requests in force over those windows.

Changes are counted over the windows a container lived after its warm-up, up to
its last sample: a block replays every container to the block's end, and a
strategy may still change requests after a container's last sample, which no
container-day holds. Container-days for the distribution of changes (and
Autopilot's job-day slack) are consecutive 24 h periods from the end of each
container's warm-up; a period is as long as the container lived in it, so a gap
in the samples (a scrape that failed, a dropped row) shortens no day, while the
tail of a series does. A period shorter than half a day joins the distribution
only when it is the container's only one, and each period's count is scaled to a
full day (changes / days). The mean changes per container-day divides by those
same lived days; the other per-day figures (OOM kills) by the sampled ones.

Every fleet-wide figure is a ratio of sums over all containers (or, for the
per-container-day figures, a statistic over all container-days), so per-block
sums add up to exactly the same answer however the fleet was split.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.backtest.container_blocks import ReplayBlock
from recommender.backtest.engine import Trajectory
from tailor.durations import DAY, HOUR

GIB = 2.0**30
METRIC_NAMES = (
    "cpu_relative_slack",
    "cpu_shortfall_rate",
    "memory_relative_slack",
    "oom_per_container_day",
    "changes_per_container_day",
    "changes_per_container_day_p50",
    "changes_per_container_day_p99",
    "cpu_core_hours_requested",
    "memory_gib_hours_requested",
    "autopilot_memory_relative_slack",
)
SUM_COLUMNS = (
    "evaluated_windows",
    "container_days",
    "lived_days",
    "cpu_windows",
    "cpu_shortfall_windows",
    "cpu_slack_core_hours",
    "cpu_core_hours_requested",
    "cpu_core_hours_used",
    "memory_windows",
    "memory_slack_gib_hours",
    "memory_gib_hours_requested",
    "ooms",
    "changes",
)
DAY_COLUMNS = ("row", "day", "evaluated_days", "changes", "autopilot_memory_relative_slack")


@dataclass(frozen=True)
class BlockMetrics:
    """Per-container sums (SUM_COLUMNS) and per-container-day rows (DAY_COLUMNS)."""

    sums: pd.DataFrame  # indexed like block.rows (history row numbers in column "row")
    days: pd.DataFrame


def _ratio(numerator: np.ndarray | float, denominator: np.ndarray | float) -> np.ndarray:
    num = np.asarray(numerator, dtype=np.float64)
    den = np.asarray(denominator, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def grouped_quantile(groups: np.ndarray, values: np.ndarray, q: float, size: int) -> np.ndarray:
    """The q-quantile (linear interpolation) of `values` in each of `size` groups; NaN if empty."""
    out = np.full(size, np.nan)
    if values.size == 0:
        return out
    order = np.lexsort((values, groups))
    ordered = values[order]
    counts = np.bincount(groups, minlength=size)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    filled = counts > 0
    rank = q * (counts[filled] - 1)  # within the group: independent of where it sits
    below = np.floor(rank)
    fraction = rank - below
    low = starts[filled] + below.astype(np.int64)
    high = np.minimum(low + 1, starts[filled] + counts[filled] - 1)
    out[filled] = ordered[low] * (1 - fraction) + ordered[high] * fraction
    return out


def _per_row(values: np.ndarray) -> np.ndarray:
    """Sum each container's windows: (windows, n) -> (n,).

    Summed as contiguous rows, so a container's total is bit-identical however
    many other containers its block holds (engines and block sizes agree exactly).
    """
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64).T).sum(axis=1)


def block_metrics(block: ReplayBlock, trajectory: Trajectory) -> BlockMetrics:
    """Metric sums for every container of a block, from what the strategy did."""
    step = block.usage.step
    windows = block.usage.n_windows
    cpu = block.usage.cpu.T
    peak = block.usage.memory.T
    position = np.arange(windows)[:, None]
    after = position >= block.evaluation_start[None, :]
    lived = after & (position <= block.last_window[None, :])
    cpu_ok = after & ~np.isnan(cpu) & ~np.isnan(trajectory.cpu)
    mem_ok = after & ~np.isnan(peak) & ~np.isnan(trajectory.memory)
    evaluated = cpu_ok | mem_ok
    cpu_request = np.where(cpu_ok, trajectory.cpu, 0.0)
    cpu_used = np.where(cpu_ok, cpu, 0.0)
    mem_request = np.where(mem_ok, trajectory.memory, 0.0)
    mem_used = np.where(mem_ok, peak, 0.0)
    hours = step / HOUR
    evaluated_windows = evaluated.sum(axis=0)
    sums = {
        "row": block.rows,
        "evaluated_windows": evaluated_windows,
        "container_days": evaluated_windows * step / DAY,
        "lived_days": lived.sum(axis=0) * step / DAY,
        "cpu_windows": cpu_ok.sum(axis=0),
        "cpu_shortfall_windows": (cpu_ok & (cpu_used > cpu_request)).sum(axis=0),
        "cpu_slack_core_hours": _per_row(np.maximum(cpu_request - cpu_used, 0)) * hours,
        "cpu_core_hours_requested": _per_row(cpu_request) * hours,
        "cpu_core_hours_used": _per_row(cpu_used) * hours,
        "memory_windows": mem_ok.sum(axis=0),
        "memory_slack_gib_hours": _per_row(np.maximum(mem_request - mem_used, 0)) * hours / GIB,
        "memory_gib_hours_requested": _per_row(mem_request) * hours / GIB,
        "ooms": (trajectory.oom & lived).sum(axis=0),
        "changes": (trajectory.changed & lived).sum(axis=0),
    }
    days = _container_days(block, trajectory, after, lived, mem_ok)
    return BlockMetrics(pd.DataFrame(sums), days)


def counted_days(span: np.ndarray, first: np.ndarray, per_day: int) -> np.ndarray:
    """Which container-days join the distribution of changes: at least half a day
    long (`span`: the windows the container lived in it), or the container's first
    (possibly only) day."""
    return (span >= per_day / 2) | (first & (span > 0))


def _container_days(
    block: ReplayBlock,
    trajectory: Trajectory,
    after: np.ndarray,
    lived: np.ndarray,
    mem_ok: np.ndarray,
) -> pd.DataFrame:
    """One row per (container, 24 h period after its warm-up)."""
    windows, n = lived.shape
    per_day = max(1, DAY // block.usage.step)
    offset = np.arange(windows)[:, None] - block.evaluation_start[None, :]
    day = np.where(after, offset // per_day, 0)
    n_days = int(day.max()) + 1 if windows else 1
    group = np.arange(n)[None, :] * n_days + day
    size = n * n_days
    span = np.bincount(group[lived], minlength=size)
    changes = np.bincount(
        group[lived], weights=trajectory.changed[lived].astype(np.float64), minlength=size
    )
    groups = group[mem_ok]
    peak_p95 = grouped_quantile(groups, block.usage.memory.T[mem_ok], 0.95, size)
    limit_mean = _ratio(
        np.bincount(groups, weights=trajectory.memory_limit[mem_ok], minlength=size),
        np.bincount(groups, minlength=size),
    )
    autopilot_slack = _ratio(limit_mean - peak_p95, limit_mean)
    index = np.arange(size)
    day_of = index % n_days
    keep = counted_days(span, day_of == 0, per_day)
    evaluated_days = span[keep] * block.usage.step / DAY
    return pd.DataFrame(
        {
            "row": block.rows[index[keep] // n_days],
            "day": day_of[keep],
            "evaluated_days": evaluated_days,
            "changes": changes[keep],
            "autopilot_memory_relative_slack": autopilot_slack[keep],
        }
    )


def metrics_from_sums(sums: pd.DataFrame | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The per-row metrics (except the container-day distribution) from summed columns."""
    s = {name: np.asarray(sums[name], dtype=np.float64) for name in SUM_COLUMNS}
    return {
        "cpu_relative_slack": _ratio(s["cpu_slack_core_hours"], s["cpu_core_hours_requested"]),
        "cpu_shortfall_rate": _ratio(s["cpu_shortfall_windows"], s["cpu_windows"]),
        "memory_relative_slack": _ratio(
            s["memory_slack_gib_hours"], s["memory_gib_hours_requested"]
        ),
        "oom_per_container_day": _ratio(s["ooms"], s["container_days"]),
        "changes_per_container_day": _ratio(s["changes"], s["lived_days"]),
        "cpu_core_hours_requested": s["cpu_core_hours_requested"],
        "memory_gib_hours_requested": np.where(
            s["memory_windows"] > 0, s["memory_gib_hours_requested"], np.nan
        ),
    }


def _nan_statistic(values: np.ndarray, kind: str) -> float:
    finite = values[~np.isnan(values)]
    if finite.size == 0:
        return float("nan")
    if kind == "mean":
        return float(finite.mean())
    return float(np.quantile(finite, {"p50": 0.5, "p99": 0.99}[kind]))


def summarize(sums: pd.DataFrame, days: pd.DataFrame) -> dict[str, float]:
    """The fleet-wide metrics of one strategy, named exactly as METRIC_NAMES."""
    totals = {name: np.asarray([sums[name].sum()]) for name in SUM_COLUMNS}
    fleet = {name: float(values[0]) for name, values in metrics_from_sums(totals).items()}
    rates = _ratio(days["changes"].to_numpy(), days["evaluated_days"].to_numpy())
    slack = days["autopilot_memory_relative_slack"].to_numpy(dtype=np.float64)
    fleet["changes_per_container_day_p50"] = _nan_statistic(rates, "p50")
    fleet["changes_per_container_day_p99"] = _nan_statistic(rates, "p99")
    fleet["autopilot_memory_relative_slack"] = _nan_statistic(slack, "mean")
    return {name: fleet[name] for name in METRIC_NAMES}


def per_container(sums: pd.DataFrame, days: pd.DataFrame) -> pd.DataFrame:
    """Every metric per container (the distribution figures over its own days)."""
    frame = sums.copy()
    for name, values in metrics_from_sums(sums).items():
        frame[name] = values
    rates = days.assign(rate=_ratio(days["changes"].to_numpy(), days["evaluated_days"].to_numpy()))
    grouped = rates.groupby("row")
    frame = frame.set_index("row")
    frame["changes_per_container_day_p50"] = grouped["rate"].median()
    frame["changes_per_container_day_p99"] = grouped["rate"].quantile(0.99)
    frame["autopilot_memory_relative_slack"] = grouped["autopilot_memory_relative_slack"].mean()
    return frame.reset_index()
