"""Throughput of the vectorised upstream-VPA model (recommender.vpa).

Measures, on synthetic usage (gamma-distributed CPU, uniform memory, 5-minute
samples, 1 % of values missing):

1. bulk ingest of 10,000 series x 2,000 samples through `add_samples`, rows
   grouped by series (a history load) and time-major (series interleaved);
2. the replay fast path `add_window` (one call per 5-minute window);
3. one `recommend()` over 10,000 aggregates, and checkpoint export.

Prints one JSON object (medians over `--runs` runs); `--out FILE` also writes it.
Goals: >= 5 million samples/s ingest, recommend() < 1 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import emit
from recommender.vpa import VpaModel

START = 1_700_000_000
STEP = 300
INGEST_GOAL = 5_000_000.0
RECOMMEND_GOAL = 1.0


def synthetic_usage(n_series: int, n_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(cpu, memory) of shape (n_samples, n_series): cores and bytes, NaN = missing."""
    rng = np.random.default_rng(seed)
    level = rng.lognormal(-2.0, 1.0, n_series)
    cpu = rng.gamma(2.0, 0.5, (n_samples, n_series)) * level
    memory = rng.uniform(0.5, 1.0, (n_samples, n_series)) * rng.lognormal(19.5, 1.0, n_series)
    cpu[rng.random(cpu.shape) < 0.01] = np.nan
    memory[rng.random(memory.shape) < 0.01] = np.nan
    return cpu, memory


def timed(runs: int, setup: Callable[[], Any], action: Callable[[Any], object]) -> list[float]:
    """Seconds of `action(setup())` per run (setup not timed)."""
    seconds = []
    for _ in range(runs):
        state = setup()
        start = time.perf_counter()
        action(state)
        seconds.append(time.perf_counter() - start)
    return seconds


def summary(seconds: list[float], samples: int | None = None) -> dict[str, Any]:
    median = statistics.median(seconds)
    out: dict[str, Any] = {"median_s": round(median, 4), "runs_s": [round(s, 4) for s in seconds]}
    if samples is not None:
        out["samples"] = samples
        out["samples_per_s"] = round(samples / median)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=2_000, help="samples per series")
    parser.add_argument("--windows", type=int, default=500, help="add_window calls per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    n_series, n_samples = args.series, args.samples
    cpu, memory = synthetic_usage(n_series, n_samples, args.seed)
    mapping = np.arange(n_series)  # one series per aggregate: n_series aggregates
    total = n_series * n_samples
    times = START + STEP * np.arange(n_samples, dtype=np.int64)

    # Time-major rows (sample j of every series, then sample j + 1, ...).
    time_major = (
        np.tile(np.arange(n_series), n_samples),
        np.repeat(times, n_series),
        cpu.reshape(-1),
        memory.reshape(-1),
    )
    # Series-grouped rows (all samples of series 0, then series 1, ...).
    grouped = (
        np.repeat(np.arange(n_series), n_samples),
        np.tile(times, n_series),
        np.ascontiguousarray(cpu.T).reshape(-1),
        np.ascontiguousarray(memory.T).reshape(-1),
    )

    def fresh() -> VpaModel:
        return VpaModel(mapping)

    ingest_grouped = timed(args.runs, fresh, lambda m: m.add_samples(*grouped))
    ingest_time_major = timed(args.runs, fresh, lambda m: m.add_samples(*time_major))
    windows = min(args.windows, n_samples)

    def replay(model: VpaModel) -> None:
        for j in range(windows):
            model.add_window(int(times[j]), cpu[j], memory[j])

    add_window = timed(args.runs, fresh, replay)

    loaded = fresh()
    loaded.add_samples(*grouped)
    recommend = timed(max(args.runs, 5), lambda: loaded, lambda m: m.recommend())
    checkpoints = timed(args.runs, lambda: loaded, lambda m: m.to_checkpoints(np.arange(n_series)))

    grouped_rate = total / statistics.median(ingest_grouped)
    result = {
        "benchmark": "vpa",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
        "series": n_series,
        "aggregates": n_series,
        "samples_per_series": n_samples,
        "ingest_grouped": summary(ingest_grouped, total),
        "ingest_time_major": summary(ingest_time_major, total),
        "add_window": {
            **summary(add_window, windows * n_series),
            "ms_per_window": round(statistics.median(add_window) / windows * 1e3, 3),
        },
        "recommend": summary(recommend),
        "to_checkpoints": summary(checkpoints),
        "goals": {
            "ingest_samples_per_s": INGEST_GOAL,
            "recommend_s": RECOMMEND_GOAL,
            "ingest_met": grouped_rate >= INGEST_GOAL
            and total / statistics.median(ingest_time_major) >= INGEST_GOAL,
            "recommend_met": statistics.median(recommend) < RECOMMEND_GOAL,
        },
    }
    emit(result, args.out)


if __name__ == "__main__":
    main()
