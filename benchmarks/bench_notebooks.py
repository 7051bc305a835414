"""Run time of the notebooks under notebooks/, executed headless on their default inputs.

Each notebook runs once, as `tests/notebooks/` runs it (nbclient, its own kernel), in a
child process so that the kernel and the replay workers it starts are all counted:
CPU seconds are the kernel's accounting of that finished child (user + system, its
descendants included), wall seconds the clock around it. Goal (issue 40): each within
2 minutes on 2 cores. The shared traces are read where they live
($KUBE_TAILOR_DATA or ../shared/data).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path
from typing import Any

from benchmarks.report import emit, time_child

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
GOAL_SECONDS = 120.0  # on 2 cores
RUN = (
    "import sys, nbformat\n"
    "from nbclient import NotebookClient\n"
    "path = sys.argv[1]\n"
    "book = nbformat.read(path, as_version=4)\n"
    "NotebookClient(book, timeout=1800, kernel_name='python3',\n"
    "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
)


def run_once(path: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of executing `path` in a child process."""
    return time_child([sys.executable, "-c", RUN, str(path), str(path.parent)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", nargs="*", default=None, help="notebook names (stems)")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {
        "benchmark": "notebooks",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),  # a shared machine shows here
        "goal_seconds_on_2_cores": GOAL_SECONDS,
    }
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        if args.only and path.stem not in args.only:
            continue
        cpu, wall = run_once(path)
        results[path.stem] = {"cpu_seconds": round(cpu, 1), "wall_seconds": round(wall, 1)}
    emit(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
