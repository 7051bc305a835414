"""What a recommendation changes and saves: current requests beside recommended ones.

Pure functions on the recommendation frame (`recommend_vpa`, `recommend_forecast_workloads`),
shared by `tailor recommend` and the notebooks:

- `current_requests(usage)`: each (namespace, workload, container)'s requests now, from
  the history's `cpu_request` / `memory_request` columns (files, kube-state-metrics),
  and how many pods run it; `with_current` joins them (or the cluster's) onto the rows.
- `with_changes`: the change per resource (absolute, relative) and its `severity`;
  `schedule_changes` the same for each period of a forecast schedule, and
  `schedule_means` what a schedule requests on average (its cost).
- `savings_summary`: per namespace and overall, what is requested now and what would
  be, in cores and GiB, and at a price per core-hour and GiB-hour, per month.

A current request that is unknown stays NaN: it is never read as zero, and totals
count only the containers whose current request is known (`known` says how many).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

KEYS = ["namespace", "workload", "container"]
RESOURCES = ("cpu", "memory")
GIB = 2.0**30
HOURS_PER_MONTH = 730.0  # 365 days x 24 h / 12
# Round on-demand list prices of a general-purpose cloud VM, split per resource; an
# assumption to size the savings, not a quote: give your own with --cpu-price and
# --memory-price (currency as you like).
DEFAULT_CPU_PRICE = 0.03  # per core-hour
DEFAULT_MEMORY_PRICE = 0.004  # per GiB-hour
SEVERITIES = ("good", "unknown", "warning", "critical")  # from least to most urgent
FAR = 2.0  # a request this many times its target is critical
NEAR = 0.25  # a request further than this from its target (relative) is a warning


def current_requests(usage: pd.DataFrame) -> pd.DataFrame:
    """Per aggregate: the requests of its latest sample (`cpu_current` cores,
    `memory_current` bytes; NaN where the history has no request) and `pods`, the
    distinct pods seen at that aggregate's last timestamp."""
    columns = [*KEYS, "cpu_current", "memory_current", "pods"]
    if usage.empty:
        return pd.DataFrame(columns=columns)
    frame = usage.loc[:, [*KEYS, "timestamp", "pod"]].copy()
    for resource in RESOURCES:
        column = f"{resource}_request"
        frame[f"{resource}_current"] = usage.get(column, np.nan)
    last = frame.groupby(KEYS, sort=False)["timestamp"].transform("max")
    latest = frame[frame["timestamp"] == last]
    grouped = latest.groupby(KEYS, sort=False)
    result = grouped[["cpu_current", "memory_current"]].max()
    result["pods"] = grouped["pod"].nunique()
    return result.reset_index().loc[:, columns]


def with_current(rows: pd.DataFrame, current: pd.DataFrame) -> pd.DataFrame:
    """`rows` with `cpu_current`, `memory_current` and `pods` from `current` (NaN and 1
    pod where a row has none), in the rows' order."""
    wanted = [*KEYS, "cpu_current", "memory_current", "pods"]
    present = current.reindex(columns=wanted)
    out = rows.drop(columns=[c for c in wanted[3:] if c in rows]).merge(
        present, on=KEYS, how="left"
    )
    out["pods"] = out["pods"].fillna(1).astype(np.int64)
    for resource in RESOURCES:
        out[f"{resource}_current"] = out[f"{resource}_current"].astype(np.float64)
    return out


def severity(
    current: np.ndarray, target: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """How far a request is from its recommendation (KRR's idea, on the VPA's bounds):

    - `unknown`: no current request, or nothing recommended;
    - `critical`: below the lower bound (throttling or OOM kills ahead), or `FAR` times
      the target or more (paying for at least twice what is used);
    - `warning`: above the upper bound, or more than `NEAR` away from the target;
    - `good`: otherwise.
    """
    known = ~(np.isnan(current) | np.isnan(target) | np.isnan(lower) | np.isnan(upper))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = current / target
        critical = (current < lower) | (ratio >= FAR)
        warning = (current > upper) | (np.abs(ratio - 1.0) > NEAR)
    labels = np.select(
        [~known, critical, warning], ["unknown", "critical", "warning"], default="good"
    )
    return np.asarray(labels, dtype=object)


def _change(out: pd.DataFrame, resource: str, planned: str) -> np.ndarray:
    """Adds `{r}_change` (planned - current) and `{r}_change_ratio`; returns the current."""
    current = out[f"{resource}_current"].to_numpy(dtype=np.float64)
    change = out[planned].to_numpy(dtype=np.float64) - current
    out[f"{resource}_change"] = change
    with np.errstate(divide="ignore", invalid="ignore"):
        out[f"{resource}_change_ratio"] = np.where(current > 0, change / current, np.nan)
    return current


def schedule_changes(schedule: pd.DataFrame, current: pd.DataFrame) -> pd.DataFrame:
    """Schedule periods (`cpu_request`, `memory_request`) beside the requests in force now
    (`with_current`), with each period's change from them, as `with_changes` for a
    recommendation."""
    out = with_current(schedule, current)
    for resource in RESOURCES:
        _change(out, resource, f"{resource}_request")
    return out


def schedule_means(schedule: pd.DataFrame) -> pd.DataFrame:
    """Per (namespace, workload, container): the requests a schedule holds on average over
    its periods, weighted by their length, as `{r}_target`: what following it costs, for
    `savings_summary`. NaN where no period has the resource (memory not measured)."""
    seconds = (schedule["end"] - schedule["start"]).dt.total_seconds().to_numpy()
    frame = schedule.loc[:, KEYS].copy()
    for resource in RESOURCES:
        values = schedule[f"{resource}_request"].to_numpy(dtype=np.float64)
        frame[f"{resource}_weighted"] = values * seconds
        frame[f"{resource}_seconds"] = np.where(np.isnan(values), 0.0, seconds)
    sums = frame.groupby(KEYS, sort=False).sum(min_count=1)
    means = pd.DataFrame(index=sums.index)
    for resource in RESOURCES:
        held = sums[f"{resource}_seconds"].replace(0.0, np.nan)
        means[f"{resource}_target"] = sums[f"{resource}_weighted"] / held
    return means.reset_index()


def with_changes(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows (with currents) gaining per resource `{r}_change` (target - current, NaN when
    either is unknown), `{r}_change_ratio` (change / current) and `{r}_severity`, and
    `severity`, the worse of the two."""
    out = rows.copy()
    rank = {name: index for index, name in enumerate(SEVERITIES)}
    worst = np.zeros(len(out), dtype=np.int64)
    for resource in RESOURCES:
        current = _change(out, resource, f"{resource}_target")
        labels = severity(
            current,
            out[f"{resource}_target"].to_numpy(dtype=np.float64),
            out[f"{resource}_lower"].to_numpy(dtype=np.float64),
            out[f"{resource}_upper"].to_numpy(dtype=np.float64),
        )
        out[f"{resource}_severity"] = labels
        worst = np.maximum(worst, [rank[label] for label in labels])
    out["severity"] = [SEVERITIES[index] for index in worst]
    return out


@dataclass(frozen=True)
class Prices:
    """Price per core-hour and per GiB-hour."""

    cpu: float = DEFAULT_CPU_PRICE
    memory: float = DEFAULT_MEMORY_PRICE

    def __post_init__(self) -> None:
        for name, value in (("cpu", self.cpu), ("memory", self.memory)):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"the {name} price must be a finite number >= 0, got {value}")


def savings_summary(rows: pd.DataFrame, prices: Prices | None = None) -> pd.DataFrame:
    """Per namespace, then the total (namespace None): containers, those with a known current
    request of both resources (`known`), cores and GiB requested now and recommended (over
    their pods, known rows only), the monthly cost of each and the saving (now - after).

    Rows need `pods`, `{r}_current` and `{r}_target` (see `with_current`).
    """
    prices = prices or Prices()
    frame = rows.loc[:, ["namespace", "pods"]].copy()
    known = rows["cpu_current"].notna() & rows["memory_current"].notna()
    known &= rows["cpu_target"].notna() & rows["memory_target"].notna()
    frame["containers"] = 1
    frame["known"] = known.astype(np.int64)
    pods = rows["pods"].to_numpy(dtype=np.float64)
    scale = {"cpu": 1.0, "memory": 1.0 / GIB}
    for resource in RESOURCES:
        for when, column in (("now", "current"), ("after", "target")):
            values = rows[f"{resource}_{column}"].to_numpy(dtype=np.float64) * pods
            frame[f"{resource}_{when}"] = np.where(known, values * scale[resource], 0.0)
    frame = frame.drop(columns="pods")
    per_namespace = frame.groupby("namespace", sort=True).sum().reset_index()
    total = frame.drop(columns="namespace").sum().to_frame().T
    total.insert(0, "namespace", None)  # not a name: any namespace may be called "total"
    summary = pd.concat([per_namespace, total], ignore_index=True)
    for when in ("now", "after"):
        summary[f"cost_{when}"] = HOURS_PER_MONTH * (
            summary[f"cpu_{when}"] * prices.cpu + summary[f"memory_{when}"] * prices.memory
        )
    summary["saving"] = summary["cost_now"] - summary["cost_after"]
    for column in ("containers", "known"):
        summary[column] = summary[column].astype(np.int64)
    return summary
