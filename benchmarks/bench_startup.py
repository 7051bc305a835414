"""Start-up cost of the `tailor` CLI: whole processes, as a user runs them.

Times `tailor --help`, `tailor --version` and `tailor recommend --demo --format json`
(`python -m tailor.cli.main`, so the checkout's code runs) over `--runs` runs after
one warm-up, and reports the median CPU seconds (user + system, from the kernel's
accounting of the finished child) and wall seconds of each as JSON.
Goals (issue 39): `--help` under 0.5 s of CPU, `recommend --demo` under 2 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.report import emit, time_child

COMMANDS = {
    "help": ["--help"],
    "version": ["--version"],
    "recommend_demo": ["recommend", "--demo", "--format", "json"],
}
GOALS = {"help": 0.5, "recommend_demo": 2.0}  # CPU seconds


def run_once(arguments: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one `tailor ARGUMENTS` process."""
    return time_child([sys.executable, "-m", "tailor.cli.main", *arguments])


def measure(arguments: list[str], runs: int) -> dict[str, Any]:
    run_once(arguments)  # warm-up: bytecode caches, the page cache
    cpu, wall = zip(*(run_once(arguments) for _ in range(runs)), strict=True)
    return {
        "command": "tailor " + " ".join(arguments),
        "runs": runs,
        "cpu_seconds_median": round(statistics.median(cpu), 3),
        "wall_seconds_median": round(statistics.median(wall), 3),
        "cpu_seconds_min": round(min(cpu), 3),
        "cpu_seconds_max": round(max(cpu), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {
        "benchmark": "cli_startup",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    for name, arguments in COMMANDS.items():
        figures = measure(arguments, args.runs)
        goal = GOALS.get(name)
        if goal is not None:
            figures["goal_cpu_seconds"] = goal
            figures["meets_goal"] = figures["cpu_seconds_median"] < goal
        results[name] = figures
    emit(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
