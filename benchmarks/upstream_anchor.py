"""Upstream's VPA model beside ours: build the anchor program, run both alternately.

The anchor (`../shared/anchors/upstream-vpa-model`) runs upstream v1.8.1's own Go model
(`ContainerState.AddSample`, `GetRecommendedPodResources`, `SaveToCheckpoint`) on
`bench_vpa`'s workload. `shared/` is read-only, so its source is copied into the
benchmark cache (a folder per content hash, so an edited anchor is rebuilt) and built
there with the Go toolchain; modules come through the Go module proxy.

The machine is shared, so neither side is timed alone: rounds alternate which one runs
first, each in a fresh process, and each step's ratio is taken round by round (ours
over upstream's CPU seconds) before the median.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.webhook_servers import CACHE, REPO, ToolUnavailable

ANCHOR_ENV = "KUBE_TAILOR_ANCHORS"
ANCHOR_NAME = "upstream-vpa-model"
#: Our step -> the anchor's step of the same work.
STEPS = {
    "ingest_grouped": "ingest_grouped",
    "ingest_time_major": "ingest_time_major",
    "add_window": "replay_windows",
    "recommend": "recommend",
    "export_checkpoints": "save_to_checkpoint",
    "export_checkpoints_json": "save_to_checkpoint_plus_json",
}
#: Steps shown beside an anchor step but not the same work, so outside the goal: the
#: statuses as Python dicts (one per histogram and status, as the service hands them
#: to its API models) against the Go structs.
ALSO_SHOWN = {"to_checkpoints": "save_to_checkpoint"}


def anchor_source() -> Path:
    """$KUBE_TAILOR_ANCHORS/upstream-vpa-model, else ../shared/anchors beside the repo."""
    configured = os.environ.get(ANCHOR_ENV)
    root = Path(configured) if configured else REPO.parent / "shared" / "anchors"
    source = root / ANCHOR_NAME
    if not (source / "main.go").exists():
        raise ToolUnavailable(f"no anchor program at {source} (set ${ANCHOR_ENV})")
    return source


def _content_hash(source: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(source)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def build_anchor(source: Path | None = None) -> Path:
    """The anchor's `vpabench` binary, copied out of the read-only folder and built once."""
    source = source or anchor_source()
    build = CACHE / f"{ANCHOR_NAME}-{_content_hash(source)}"
    binary = build / "vpabench"
    if binary.exists():
        return binary
    if build.exists():
        shutil.rmtree(build)
    shutil.copytree(source, build)
    for path in [build, *build.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    env = {**os.environ, "GOFLAGS": "-buildvcs=false"}
    done = subprocess.run(
        ["go", "build", "-o", str(binary), "."],
        cwd=build,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ToolUnavailable(f"go build of the anchor: {done.stderr.strip()[-600:]}")
    return binary


def _run_json(argv: Sequence[str], out: Path) -> dict[str, Any]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: {done.stderr.strip()[-600:]}")
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def run_ours(workload: Sequence[str], folder: Path, round_: int) -> dict[str, Any]:
    out = folder / f"ours-{round_}.json"
    argv = [sys.executable, "-m", "benchmarks.bench_vpa", "--alone", *workload, "--out", str(out)]
    return _run_json(argv, out)


def run_upstream(
    binary: Path, workload: Sequence[str], folder: Path, round_: int
) -> dict[str, Any]:
    out = folder / f"upstream-{round_}.json"
    flags = [flag.replace("--", "-", 1) for flag in workload]  # Go's flag package style
    return _run_json([str(binary), *flags, "-cluster=false", "-out", str(out)], out)


def alternate(binary: Path, workload: Sequence[str], rounds: int) -> dict[str, list[Any]]:
    """`rounds` runs of each side, in turn; odd rounds start with upstream's."""
    runs: dict[str, list[Any]] = {"ours": [], "upstream": []}
    with tempfile.TemporaryDirectory(prefix="bench-vpa-") as tmp:
        for round_ in range(rounds):
            order = ("ours", "upstream") if round_ % 2 == 0 else ("upstream", "ours")
            for side in order:
                print(f"round {round_ + 1}/{rounds}: {side}", file=sys.stderr, flush=True)
                if side == "ours":
                    runs[side].append(run_ours(workload, Path(tmp), round_))
                else:
                    runs[side].append(run_upstream(binary, workload, Path(tmp), round_))
    return runs


def compare(runs: dict[str, list[Any]]) -> dict[str, Any]:
    """Per step: CPU and wall seconds of each side (medians over rounds) and the ratio
    ours / upstream of CPU seconds, taken round by round (median, min, max)."""
    steps: dict[str, Any] = {}

    def wall(side: str, step: str) -> float:
        return round(statistics.median(run[step]["median_s"] for run in runs[side]), 4)

    for ours_step, their_step in {**STEPS, **ALSO_SHOWN}.items():
        ours_cpu = [run[ours_step]["cpu_median_s"] for run in runs["ours"]]
        their_cpu = [run[their_step]["cpu_median_s"] for run in runs["upstream"]]
        ratios = [a / b for a, b in zip(ours_cpu, their_cpu, strict=True) if b > 0]
        steps[ours_step] = {
            "upstream_step": their_step,
            "ours_cpu_s": round(statistics.median(ours_cpu), 4),
            "upstream_cpu_s": round(statistics.median(their_cpu), 4),
            "ours_wall_s": wall("ours", ours_step),
            "upstream_wall_s": wall("upstream", their_step),
            "cpu_ratio_ours_to_upstream": _spread(ratios),
            "in_goal": ours_step in STEPS,
        }
    return steps


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "min": None, "max": None}
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }
