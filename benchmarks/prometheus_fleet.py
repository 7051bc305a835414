"""A real Prometheus holding 8 days at 5 minutes of cAdvisor and kube-state-metrics series
for N containers, for `bench_prometheus`.

The history is synthetic (one container per Deployment, 100 per namespace, gamma CPU,
a slowly varying working set, requests and limits set) and goes through the product's
OpenMetrics writer, then `promtool tsdb create-blocks-from openmetrics`, a shard of
containers at a time (Debian's promtool 2.42 re-reads its whole input per 2-hour block
unless given --max-block-duration). Backfilling 10,000 containers takes a while, so
the data directory is kept under ~/.cache/kube-tailor/bench-prometheus, keyed by N and
the generator's version, and reused.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from recommender.data.openmetrics import usage_to_openmetrics

VERSION = 1
STEP = 300
END = int(datetime(2026, 11, 20, tzinfo=UTC).timestamp())  # the first pass's "now"
HISTORY = 8 * 86400
MORE = 1800  # samples after END, for the incremental passes
PER_NAMESPACE = 100
SHARD = 500
CACHE = Path.home() / ".cache" / "kube-tailor" / "bench-prometheus"


@dataclass(frozen=True)
class Container:
    namespace: str
    workload: str
    pod: str


def fleet(count: int) -> list[Container]:
    return [
        Container(
            f"team-{i // PER_NAMESPACE:03d}", f"svc-{i:05d}", f"svc-{i:05d}-7d9f8c6b5d-x{i:05d}"
        )
        for i in range(count)
    ]


def shard_usage(containers: list[Container], first: int) -> pd.DataFrame:
    """The usage history of `containers` (seeded by their position `first` on)."""
    times = np.arange(END - HISTORY - STEP, END + MORE, STEP)
    rng = np.random.default_rng(first)
    n, t = len(containers), times.size
    level = rng.lognormal(-2.0, 1.0, n)
    day = 0.6 + 0.4 * np.sin(2 * np.pi * (times % 86400) / 86400.0)
    cpu = rng.gamma(2.0, 0.5, (n, t)) * level[:, None] * day[None, :]
    base = rng.lognormal(19.5, 0.7, n)
    memory = np.floor(base[:, None] * rng.uniform(0.8, 1.0, (n, t)))
    frame = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(np.tile(times, n), unit="s", utc=True),
            "namespace": np.repeat([c.namespace for c in containers], t),
            "workload": np.repeat([c.workload for c in containers], t),
            "pod": np.repeat([c.pod for c in containers], t),
            "container": "app",
            "cpu": cpu.reshape(-1),
            "memory": memory.reshape(-1),
            "cpu_request": np.repeat(np.round(level * 2, 3) + 0.05, t),
            "memory_request": np.repeat(np.floor(base * 1.2), t),
            "cpu_limit": np.nan,
            "memory_limit": np.repeat(np.floor(base * 2.0), t),
        }
    )
    return frame


def backfilled(count: int, promtool: str, log=print) -> Path:
    """The data directory of a Prometheus holding the history of `count` containers."""
    target = CACHE / f"v{VERSION}-n{count}"
    data = target / "data"
    if (target / "done").exists():
        return data
    data.mkdir(parents=True, exist_ok=True)
    _start_from_smaller(target, count)
    containers = fleet(count)
    begun = time.monotonic()
    for first in range(0, count, SHARD):
        marker = target / f"shard-{first}.done"
        if marker.exists():  # an interrupted backfill goes on where it stopped
            continue
        text = usage_to_openmetrics(
            shard_usage(containers[first : first + SHARD], first), step=STEP
        )
        source = target / "shard.om"
        source.write_text(text)
        del text
        subprocess.run(
            [
                promtool,
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                "--max-block-duration=240h",
                str(source),
                str(data),
            ],
            check=True,
            capture_output=True,
        )
        source.unlink()
        marker.touch()
        log(
            f"backfilled {min(first + SHARD, count)}/{count} containers "
            f"({time.monotonic() - begun:.0f} s)"
        )
    (target / "done").write_text(f"{time.monotonic() - begun:.1f}\n")
    return data


def snapshot(count: int, into: Path) -> Path:
    """A copy of the finished blocks of a backfill still under way (`count` containers
    asked, fewer done), to measure the largest fleet there is while it goes on."""
    into.mkdir(parents=True)
    for block in (CACHE / f"v{VERSION}-n{count}" / "data").iterdir():
        if block.is_dir() and (block / "meta.json").exists():
            shutil.copytree(block, into / block.name)
    return into


def _start_from_smaller(target: Path, count: int) -> None:
    """Copy the blocks of the largest finished smaller fleet: its containers are the
    first of this one, their history the same (each shard is seeded by its position)."""
    if any(target.glob("shard-*.done")):
        return
    smaller = [
        (int(path.name.split("-n")[1]), path)
        for path in CACHE.glob(f"v{VERSION}-n*")
        if (path / "done").exists() and int(path.name.split("-n")[1]) < count
    ]
    if not smaller:
        return
    size, source = max(smaller)
    for block in (source / "data").iterdir():
        if block.is_dir() and (block / "meta.json").exists():
            shutil.copytree(block, target / "data" / block.name)
    for first in range(0, size, SHARD):
        (target / f"shard-{first}.done").touch()


if __name__ == "__main__":
    import sys

    for n in map(int, sys.argv[1:]):
        print(backfilled(n, shutil.which("promtool") or "promtool"), flush=True)
