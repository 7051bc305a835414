"""What each kind of history query costs Prometheus and the client: one full load's query
plan (`recommender.data.prometheus.query_plan`) run one kind after another against the
backfilled Prometheus of `bench_prometheus`, with Prometheus's CPU seconds (its /proc
accounting) and the client's around each kind.

    python -m benchmarks.bench_prometheus_queries [--size 1000] [--out FILE]
    python -m benchmarks.bench_prometheus_queries --first-pass --size 10000

The evidence for the first pass's bound (docs/results/performance.md): which queries
Prometheus spends its CPU on, and how many points each returns. With `--first-pass`,
instead: the first pass of `bench_prometheus` alone (the load through the service's
history cache, the VPA model, its JSON), with the CPU seconds of both sides.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import prometheus_fleet as fleet
from benchmarks.bench_prometheus import cpu_seconds, serve
from benchmarks.report import emit


def per_kind(url: str, pid: int) -> dict[str, dict[str, Any]]:
    from recommender.data.prometheus import PrometheusSettings, fetch_one, query_plan
    from recommender.data.prometheus_http import Fetcher, connect

    settings = PrometheusSettings(url=url, retries=0, timeout_seconds=1800)
    start, end = settings.resolve_range(datetime.fromtimestamp(fleet.END, UTC))
    plan = query_plan(settings.queries(), start, end, int(settings.chunk.total_seconds()))
    kinds: dict[str, list[tuple[str, str, int, int]]] = defaultdict(list)
    for task in plan:
        kinds[task[0]].append(task)
    client = connect(settings)
    fetcher = Fetcher(settings, client)
    result = {}
    try:
        for kind, tasks in kinds.items():
            served, began = cpu_seconds(pid), time.process_time()
            points = sum(int(fetch_one(fetcher, *task).values.size) for task in tasks)
            result[kind] = {
                "queries": len(tasks),
                "points": points,
                "prometheus_cpu_s": round(cpu_seconds(pid) - served, 2),
                "client_cpu_s": round(time.process_time() - began, 2),
                "example": tasks[0][1],
            }
    finally:
        client.close()
    return result


def first_pass(url: str, pid: int) -> dict[str, Any]:
    """`bench_prometheus.one_run`'s first pass, without the forecast and the next passes:
    wall seconds of each phase, CPU seconds of this process and of Prometheus."""
    from recommender.data.prometheus import PrometheusSettings
    from recommender.recommend import recommend_vpa
    from recommender.service.history_cache import HistoryCache
    from tailor.cli.output import OutputFormat, render

    settings = PrometheusSettings(url=url, retries=0, timeout_seconds=1800)
    answered = [0.0]
    cache = HistoryCache(progress=lambda _d, _t: answered.__setitem__(0, time.perf_counter()))
    served, cpu, began = cpu_seconds(pid), time.process_time(), time.perf_counter()
    usage, events = cache.load(settings, datetime.fromtimestamp(fleet.END, UTC))
    loaded, load_cpu, load_served = time.perf_counter(), time.process_time(), cpu_seconds(pid)
    text = render(recommend_vpa(usage, events, checked=True), OutputFormat.json)
    return {
        "usage_rows": len(usage),
        "query_s": round(answered[0] - began, 1),
        "assembly_s": round(loaded - answered[0], 1),
        "load_client_cpu_s": round(load_cpu - cpu, 1),
        "load_prometheus_cpu_s": round(load_served - served, 1),
        "vpa_and_json_cpu_s": round(time.process_time() - load_cpu, 1),
        "first_pass_s": round(time.perf_counter() - began, 1),
        "json_bytes": len(text),
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--first-pass", action="store_true", help="time the first pass alone")
    args = parser.parse_args()
    data = fleet.backfilled(args.size, shutil.which("promtool") or "promtool")
    with tempfile.TemporaryDirectory(prefix="bench-prometheus-queries-") as folder:
        process, url = serve(data, Path(folder))
        try:
            if args.first_pass:
                emit({"benchmark": "prometheus_first_pass", "containers": args.size,
                      **first_pass(url, process.pid)}, args.out)  # fmt: skip
                return
            kinds = per_kind(url, process.pid)
        finally:
            process.terminate()
            process.wait(timeout=60)
    total = {
        name: round(sum(kind[name] for kind in kinds.values()), 2)
        for name in ("queries", "points", "prometheus_cpu_s", "client_cpu_s")
    }
    emit({"benchmark": "prometheus_queries", "containers": args.size, "kinds": kinds,
          "total": total}, args.out)  # fmt: skip


if __name__ == "__main__":
    main()
