"""Benchmark: backtest the shared traces with every strategy, print JSON.

    .venv/bin/python -m benchmarks.bench_backtest [--cases bitbrains-month,bitbrains,...]
        [--strategies vpa,krr,autopilot,oracle,forecast] [--workers N]
        [--engine local|dask] [--repeat N] [--out FILE]

Goals (issue 46): `bitbrains-month`, 50 Bitbrains VMs x one month (2013-8) on one
worker, all five strategies under 1 CPU-minute (`cpu_seconds`); `bitbrains`, all
150 VM-months, under 2 minutes on 2 cores (`backtest_seconds`, wall). Each figure
is the median of `--repeat` runs; CPU seconds count this process and its worker
processes; loading the files is timed apart as `load_seconds`.
Data: Bitbrains GWA-T-12 Rnd (Shen et al., CCGrid 2015), Azure Public Dataset V1
(Cortez et al., SOSP 2017, CC-BY 4.0), Google cluster-data 2011 (job series by
HiPro-IT); read from ../shared/data, never copied.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.report import emit
from recommender.backtest import ExecutionSettings, ReplaySettings, run_backtest
from recommender.data.traces import load_dataset

# case -> (dataset, loader options, workers (None: the --workers given), goal)
CASES: dict[str, tuple[str, dict[str, Any], int | None, dict[str, float]]] = {
    "bitbrains-month": ("bitbrains", {"months": ["2013-8"]}, 1, {"cpu_seconds": 60.0}),
    "bitbrains": ("bitbrains", {}, None, {"backtest_seconds": 120.0}),
    "azure": ("azure", {}, None, {}),
    "google2011": ("google2011", {}, None, {}),
}
STRATEGIES = "vpa,krr,autopilot,oracle,forecast"


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the worker pool)."""
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def bench_case(
    name: str, strategies: str, execution: ExecutionSettings, repeat: int
) -> dict[str, Any]:
    dataset, options, workers, goals = CASES[name]
    if workers is not None:
        execution = ExecutionSettings(engine=execution.engine, workers=workers)
    started = time.perf_counter()
    usage = load_dataset(dataset, **options)
    load_seconds = time.perf_counter() - started
    settings = ReplaySettings()
    walls, cpus = [], []
    for _ in range(repeat):
        began, cpu = time.perf_counter(), _cpu_seconds()
        result = run_backtest(
            usage, strategies=strategies, replay_settings=settings, execution=execution
        )
        walls.append(time.perf_counter() - began)
        cpus.append(_cpu_seconds() - cpu)
    report: dict[str, Any] = {
        "rows": len(usage),
        "workers": execution.worker_count(),
        "load_seconds": round(load_seconds, 2),
        "backtest_seconds": round(statistics.median(walls), 2),
        "cpu_seconds": round(statistics.median(cpus), 2),
        "backtest_seconds_all": [round(seconds, 2) for seconds in walls],
        "cpu_seconds_all": [round(seconds, 2) for seconds in cpus],
        "load_average": os.getloadavg()[0],  # the machine may be shared: read with it
        "warm_up_seconds": settings.warm_up_seconds,
        "unevaluated_containers": result.unevaluated_containers,
        **result.to_dict(),
    }
    for figure, goal in goals.items():
        report[f"goal_{figure}"] = goal
        report["goal_met"] = report[figure] <= goal
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--strategies", default=STRATEGIES)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--engine", choices=("local", "dask"), default="local")
    parser.add_argument("--repeat", type=int, default=1, help="runs per case (median kept)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    execution = ExecutionSettings(engine=args.engine, workers=args.workers)
    output: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "engine": args.engine,
            "python": platform.python_version(),
        },
        "cases": {},
    }
    for name in [part.strip() for part in args.cases.split(",") if part.strip()]:
        if name not in CASES:
            parser.error(f"unknown case {name!r}: choose from {', '.join(CASES)}")
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        output["cases"][name] = bench_case(name, args.strategies, execution, args.repeat)
    emit(output, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
