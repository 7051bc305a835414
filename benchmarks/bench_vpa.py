"""Throughput of the vectorised upstream-VPA model (recommender.vpa), beside upstream's Go.

Measures, on synthetic usage (gamma-distributed CPU, uniform memory, 5-minute
samples, 1 % of values missing):

1. bulk ingest of 10,000 series x 2,000 samples through `add_samples`, rows
   grouped by series (a history load) and time-major (series interleaved);
2. the replay fast path `add_window` (one call per 5-minute window);
3. one `recommend()` over 10,000 aggregates, and checkpoint export: the status
   objects (`export_checkpoints`: every number of every status, held in columns, as
   upstream's `SaveToCheckpoint` fills its structs), the same with each status written
   as JSON (what goes to the API server), and the statuses as Python dicts
   (`to_checkpoints`, shown beside upstream's structs but outside the goal).

Wall and CPU seconds of each step (medians over `--runs` runs in one process). Unless
`--no-upstream`, the anchor program (upstream v1.8.1's model on the same workload, see
`benchmarks.upstream_anchor`) is built and the two run alternately for `--rounds`
rounds, and the JSON carries each step's CPU ratio ours / upstream. Prints one JSON
object; `--out FILE` also writes it. Goals: >= 5 million samples/s ingest, recommend()
< 1 s, and no step slower than upstream's (CPU ratio <= 1).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import emit
from benchmarks.upstream_anchor import ToolUnavailable, alternate, build_anchor, compare
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


Timing = tuple[list[float], list[float]]


def timed(runs: int, setup: Callable[[], Any], action: Callable[[Any], object]) -> Timing:
    """Wall and CPU seconds (the process's, all threads) of `action(setup())` per run."""
    seconds, cpu = [], []
    for _ in range(runs):
        state = setup()
        start, start_cpu = time.perf_counter(), time.process_time()
        action(state)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return seconds, cpu


def summary(timing: Timing, samples: int | None = None) -> dict[str, Any]:
    seconds, cpu = timing
    median = statistics.median(seconds)
    out: dict[str, Any] = {
        "median_s": round(median, 4),
        "runs_s": [round(s, 4) for s in seconds],
        "cpu_median_s": round(statistics.median(cpu), 4),
        "cpu_runs_s": [round(s, 4) for s in cpu],
    }
    if samples is not None:
        out["samples"] = samples
        out["samples_per_s"] = round(samples / median)
    return out


def checkpoint_json(model: VpaModel, rows: np.ndarray) -> int:
    """Export checkpoint statuses and write each as JSON, as they go to the API server."""
    return sum(map(len, model.export_checkpoints(rows).json()))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every step of our model in this process: wall and CPU seconds, medians of runs."""
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
    every = np.arange(n_series)
    recommend = timed(max(args.runs, 5), lambda: loaded, lambda m: m.recommend())
    export = timed(args.runs, lambda: loaded, lambda m: m.export_checkpoints(every))
    export_json = timed(args.runs, lambda: loaded, lambda m: checkpoint_json(m, every))
    dicts = timed(args.runs, lambda: loaded, lambda m: m.to_checkpoints(every))

    grouped_rate = total / statistics.median(ingest_grouped[0])
    return {
        "benchmark": "vpa",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "load_average": os.getloadavg(),
        },
        "series": n_series,
        "aggregates": n_series,
        "samples_per_series": n_samples,
        "ingest_grouped": summary(ingest_grouped, total),
        "ingest_time_major": summary(ingest_time_major, total),
        "add_window": {
            **summary(add_window, windows * n_series),
            "ms_per_window": round(statistics.median(add_window[0]) / windows * 1e3, 3),
        },
        "recommend": summary(recommend),
        "export_checkpoints": summary(export),
        "export_checkpoints_json": summary(export_json),
        "to_checkpoints": summary(dicts),
        "goals": {
            "ingest_samples_per_s": INGEST_GOAL,
            "recommend_s": RECOMMEND_GOAL,
            "ingest_met": grouped_rate >= INGEST_GOAL
            and total / statistics.median(ingest_time_major[0]) >= INGEST_GOAL,
            "recommend_met": statistics.median(recommend[0]) < RECOMMEND_GOAL,
        },
    }


def beside_upstream(args: argparse.Namespace, workload: list[str]) -> dict[str, Any]:
    """Ours and the anchor alternately, `args.rounds` rounds; ours' last run in front."""
    try:
        binary = build_anchor()
    except ToolUnavailable as error:
        return {**measure(args), "upstream_unavailable": str(error)}
    runs = alternate(binary, workload, args.rounds)
    steps = compare(runs)
    result = dict(runs["ours"][-1])
    result["upstream"] = {
        "program": "anchors/upstream-vpa-model (k8s.io/autoscaler/vertical-pod-autoscaler v1.8.1)",
        "rounds": args.rounds,
        "order": "alternating, a fresh process per side and round; odd rounds upstream first",
        "machine_shared": True,
        "steps": steps,
        "runs": runs["upstream"],
    }
    result["goals"]["no_step_slower_than_upstream"] = all(
        (step["cpu_ratio_ours_to_upstream"]["median"] or 0) <= 1.0
        for step in steps.values()
        if step["in_goal"]
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=2_000, help="samples per series")
    parser.add_argument("--windows", type=int, default=500, help="add_window calls per run")
    parser.add_argument("--runs", type=int, default=3, help="runs of each step per process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds with upstream")
    parser.add_argument("--no-upstream", action="store_true", help="ours only, one process")
    parser.add_argument("--alone", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    names = ("series", "samples", "windows", "runs", "seed")
    workload = [f"--{name}={getattr(args, name)}" for name in names]
    alone = args.alone or args.no_upstream
    result = measure(args) if alone else beside_upstream(args, workload)
    emit(result, args.out)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
