"""Run every benchmark script and keep each one's JSON result in one folder.

Speed targets are checked here, never in timed tests: each script reports
medians of repeated runs as JSON, and this runner adds a summary file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    "bench_vpa",
    "bench_forecast",
    "bench_backtest",
    "bench_frontier",
    "bench_updater",
    "bench_startup",
    "bench_webhook",
    "bench_prometheus",
    "bench_notebooks",
)


def goals_of(results: dict[str, object]) -> dict[str, object]:
    """Every benchmark's goal verdicts in one place, so a reader of summary.json sees at once
    which speed and memory goals the run met without knowing each script's layout.

    A script states its goals either as a ``goals`` object or as ``goal_*`` keys beside its
    figures (one per case); both are gathered, keyed by where they sit.
    """
    found: dict[str, object] = {}

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                where = f"{path}.{key}" if path else str(key)
                if key == "goals" or str(key).startswith("goal_"):
                    found[where] = value
                else:
                    walk(value, where)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")

    walk(results, "")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--only", nargs="*", choices=SCRIPTS, default=list(SCRIPTS))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, object] = {}
    failed = False
    for name in args.only:
        target = args.out / f"{name}.json"
        print(f"== {name}", flush=True)
        done = subprocess.run(
            [sys.executable, "-m", f"benchmarks.{name}", "--out", str(target)], check=False
        )
        if done.returncode != 0 or not target.exists():
            summary[name] = {"error": f"exit code {done.returncode}"}
            failed = True
            continue
        summary[name] = json.loads(target.read_text())
    summary["goals"] = goals_of(summary)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
