"""Run time of `tailor backtest --frontier`: every strategy swept over its risk grid.

A frontier replays each strategy once per point of its grid (46 points for `vpa`,
`krr`, `autopilot` and `forecast` at each one's own budget; four times the budgeted
strategies' points with `--budgets 6,12,24,unlimited`), so its cost is what decides
whether a user runs it on a whole month. This times the CLI as a user runs it, on a
fixed small input: the demo fleet (8 containers) over `--days` days, written to a
temporary usage file, its points run by `--workers` local processes as the backtest
does. CPU seconds are the kernel's accounting of the finished child and the workers it
waited for (user + system), wall seconds the clock around it; both depend on the load
of the machine, which is reported beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.report import emit, time_child
from recommender.data.files import write_usage
from recommender.data.synthetic import demo_fleet

STRATEGIES = "vpa,krr,autopilot,forecast"


def frontier_command(usage: Path, output: Path, workers: int, budgets: str | None) -> list[str]:
    """The `tailor backtest --frontier` process this benchmark times."""
    command = [sys.executable, "-m", "tailor.cli.main", "backtest", "--input", str(usage)]
    command += ["--strategies", STRATEGIES, "--frontier", "--workers", str(workers)]
    command += ["--no-progress", "--format", "json", "--output", str(output)]
    if budgets:
        command += ["--budgets", budgets]
    return command


def points_per_strategy(output: Path) -> dict[str, int]:
    """How many grid points each strategy replayed, read from the run's own JSON."""
    result = json.loads(output.read_text())
    strategies = result["strategies"]
    return {name: len(body.get("frontier", [])) for name, body in strategies.items()}


def measure(days: int, workers: int, budgets: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-frontier-") as folder:
        usage, output = Path(folder) / "demo.parquet", Path(folder) / "frontier.json"
        write_usage(demo_fleet(days=days)[0], usage)
        load_before = os.getloadavg()[0]
        cpu, wall = time_child(frontier_command(usage, output, workers, budgets))
        points = points_per_strategy(output)
    total = sum(points.values())
    return {
        "input": f"demo fleet, 8 containers x {days} days at 300 s (1-day warm-up)",
        "strategies": STRATEGIES,
        "budgets": budgets or "each strategy's own",
        "workers": workers,
        "points": points,
        "points_total": total,
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": round(wall, 1),
        "cpu_seconds_per_point": round(cpu / total, 2),
        "load_average_1m_before": round(load_before, 2),
        "load_average_1m_after": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=3, help="days of the demo fleet")
    parser.add_argument("--workers", type=int, default=2, help="local worker processes")
    parser.add_argument("--budgets", default=None, help="e.g. 6,12,24,unlimited")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.days < 2 or args.workers < 1:
        parser.error("--days must be at least 2 (one is the warm-up), --workers at least 1")
    results: dict[str, Any] = {
        "benchmark": "frontier",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        **measure(args.days, args.workers, args.budgets),
    }
    emit(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
