"""Benchmark: backtest the shared traces with every baseline strategy, print JSON.

    .venv/bin/python benchmarks/bench_backtest.py [--datasets bitbrains,azure,google2011]
        [--strategies vpa,krr,autopilot,oracle] [--workers N] [--engine local|dask]
        [--repeat N] [--out FILE]

Goal: all 150 Bitbrains VM-months, all four strategies, under 2 minutes on 2
cores (`backtest_seconds`, the median of `--repeat` runs; loading the files is
timed apart as `load_seconds`).
Data: Bitbrains GWA-T-12 Rnd (Shen et al., CCGrid 2015), Azure Public Dataset V1
(Cortez et al., SOSP 2017, CC-BY 4.0), Google cluster-data 2011 (job series by
HiPro-IT); read from ../shared/data, never copied.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.report import emit
from recommender.backtest import (
    ExecutionSettings,
    ReplaySettings,
    run_backtest,
)
from recommender.data.traces import load_dataset

DATASETS = ("bitbrains", "azure", "google2011")
GOAL_SECONDS = {"bitbrains": 120.0}


def bench_dataset(
    name: str, strategies: str, execution: ExecutionSettings, repeat: int
) -> dict[str, Any]:
    started = time.perf_counter()
    usage = load_dataset(name)
    load_seconds = time.perf_counter() - started
    settings = ReplaySettings()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        result = run_backtest(
            usage, strategies=strategies, replay_settings=settings, execution=execution
        )
        times.append(time.perf_counter() - began)
    report: dict[str, Any] = {
        "rows": len(usage),
        "load_seconds": round(load_seconds, 2),
        "backtest_seconds": round(statistics.median(times), 2),
        "backtest_seconds_all": [round(seconds, 2) for seconds in times],
        "warm_up_seconds": settings.warm_up_seconds,
        "unevaluated_containers": result.unevaluated_containers,
        **result.to_dict(),
    }
    if name in GOAL_SECONDS:
        report["goal_seconds"] = GOAL_SECONDS[name]
        report["goal_met"] = report["backtest_seconds"] <= GOAL_SECONDS[name]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--strategies", default="vpa,krr,autopilot,oracle")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--engine", choices=("local", "dask"), default="local")
    parser.add_argument("--repeat", type=int, default=1, help="runs per dataset (median kept)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    execution = ExecutionSettings(engine=args.engine, workers=args.workers)
    output: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "workers": execution.worker_count(),
            "engine": args.engine,
            "python": platform.python_version(),
        },
        "datasets": {},
    }
    for name in [part.strip() for part in args.datasets.split(",") if part.strip()]:
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        output["datasets"][name] = bench_dataset(name, args.strategies, execution, args.repeat)
    emit(output, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
