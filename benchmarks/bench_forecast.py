"""Throughput of the forecasting recommender (recommender.forecast).

Times `recommend_forecast` (shape detection, Holt-Winters candidates, conformal
margin calibration and fleet allocation, memory plan, 24 h schedule) on
synthetic usage at 5-minute samples: by default 10,000 containers x 8 days, a
mix of daily cycles, stationary noise, bursty spikes and on/off batch jobs with
memory that follows them, 1 % of samples missing.

Prints one JSON object (median over `--runs` runs, the per-phase split of the
last run); `--out FILE` also writes it. Goal: < 10 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.report import emit
from recommender.data.arrays import UsageArrays
from recommender.forecast.settings import ForecastSettings
from recommender.recommend import recommend_forecast

START = 1_700_006_400  # a UTC midnight
STEP = 300
PER_DAY = 288
GOAL_SECONDS = 10.0
GIB = 2.0**30


def synthetic_fleet(n_series: int, days: float, seed: int) -> UsageArrays:
    """A quarter each of daily cycles, noise, bursty spikes and on/off batch jobs."""
    rng = np.random.default_rng(seed)
    windows = int(days * PER_DAY)
    t = np.arange(windows)
    kind = np.arange(n_series) % 4
    level = rng.lognormal(-1.5, 1.0, n_series)[:, None]
    phase = 2 * np.pi * ((t % PER_DAY) / PER_DAY)[None, :] + rng.uniform(
        0, 2 * np.pi, (n_series, 1)
    )
    cycle = 1.0 + 0.6 * np.sin(phase)
    noise = rng.gamma(8.0, 1 / 8.0, (n_series, windows))
    spikes = np.where(
        rng.random((n_series, windows)) < 0.03, rng.uniform(2, 6, (n_series, windows)), 1.0
    )
    runs = np.cumsum(rng.random((n_series, windows)) < 1 / 60, axis=1) % 2  # on/off every ~5 h
    shapes = np.select(
        [kind[:, None] == 0, kind[:, None] == 1, kind[:, None] == 2],
        [cycle * noise, noise, noise * spikes],
        default=0.02 + 4.0 * runs * noise,
    )
    cpu = level * shapes
    memory_level = rng.lognormal(20.0, 1.0, n_series)[:, None]
    memory = memory_level * (0.8 + 0.2 * noise) * np.where(kind[:, None] == 3, 0.2 + runs, 1.0)
    cpu[rng.random(cpu.shape) < 0.01] = np.nan
    memory[np.isnan(cpu)] = np.nan
    names = [f"pod-{i}" for i in range(n_series)]
    keys = pd.DataFrame(
        {"namespace": "bench", "workload": names, "pod": names, "container": "main"}
    )
    return UsageArrays(keys, START, STEP, cpu, memory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--days", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="threads (the goal is 2 cores)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    usage = synthetic_fleet(args.series, args.days, args.seed)
    settings = ForecastSettings()
    seconds = []
    result = None
    for _ in range(args.runs):
        begin = time.perf_counter()
        result = recommend_forecast(usage, settings=settings, workers=args.workers)
        seconds.append(time.perf_counter() - begin)
    assert result is not None
    median = statistics.median(seconds)
    frame = result.recommendations
    report: dict[str, Any] = {
        "benchmark": "forecast",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
        "series": usage.n_series,
        "windows_per_series": usage.n_windows,
        "samples": usage.n_series * usage.n_windows,
        "schedule_rows": len(result.schedule),
        "workers": args.workers,
        "recommend_forecast": {
            "median_s": round(median, 3),
            "runs_s": [round(s, 3) for s in seconds],
            "series_per_s": round(usage.n_series / median),
        },
        "shapes_found": frame["season"].value_counts().to_dict(),
        "classes_found": frame["workload_class"].value_counts().to_dict(),
        "goals": {"seconds": GOAL_SECONDS, "met": median < GOAL_SECONDS},
    }
    emit(report, args.out)


if __name__ == "__main__":
    main()
