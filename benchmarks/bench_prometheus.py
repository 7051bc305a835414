"""History from a real Prometheus at scale: `tailor recommend --prometheus` with both
models, for 1,000 / 2,000 / 10,000 containers of 8 days at 5 minutes.

    python -m benchmarks.bench_prometheus [--sizes 1000 2000] [--runs 1] [--out FILE]
    python -m benchmarks.bench_prometheus --sizes 10000   # backfills for hours the first time

Each size's Prometheus is backfilled once (`prometheus_fleet`, cached under
~/.cache/kube-tailor/bench-prometheus) and served by a real `prometheus`; each run is
a fresh process (so its peak RSS is its own) doing what `tailor recommend
--prometheus URL --history 8d --step 5m --strategy S --format json` does, with "now"
at the backfill's end: the load (query time: until the last answer; assembly: the
grids cut into the usage frame), the model, and the JSON written. Goals (issue 46,
at 10,000 containers): the whole first read under 60 s, peak RSS under 4 GiB.
Sizes whose backfill is not cached are backfilled first unless `--cached-only`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import prometheus_fleet as fleet
from benchmarks.report import emit

GOALS = {"containers": 10_000, "first_read_s": 60.0, "peak_rss_gib": 4.0}


def one_run(url: str, output: Path, prometheus_pid: int | None = None) -> dict[str, Any]:
    """In this process: one load (through the service's history cache), each model and its
    JSON written, then the service's next passes reading what is new; seconds of each and
    the peak RSS."""
    from recommender.data.prometheus import PrometheusSettings
    from recommender.recommend import recommend_forecast_workloads, recommend_vpa
    from recommender.service.history_cache import HistoryCache
    from tailor.cli.output import OutputFormat, render

    settings = PrometheusSettings(url=url, retries=0, timeout_seconds=1800)
    now = datetime.fromtimestamp(fleet.END, UTC)
    answered = [0.0]
    cache = HistoryCache(
        progress=lambda _done, _total: answered.__setitem__(0, time.perf_counter())
    )
    began = time.perf_counter()
    usage, events = cache.load(settings, now)
    loaded = time.perf_counter()
    containers = int(usage[["namespace", "pod", "container"]].drop_duplicates().shape[0])
    result: dict[str, Any] = {
        "containers": containers,
        "usage_rows": len(usage),
        "usage_bytes_per_container": round(usage.memory_usage(deep=True).sum() / containers),
        "query_s": round(answered[0] - began, 2),
        "assembly_s": round(loaded - answered[0], 2),
        "load_peak_rss_mib": _peak_mib(),
        "load_cpu_s": round(_cpu_s(), 1),
    }
    for model in ("vpa", "forecast"):
        started, cpu = time.perf_counter(), _cpu_s()
        if model == "forecast":
            frame, _ = recommend_forecast_workloads(
                usage, events, None, settings.step_seconds, checked=True
            )
        else:
            frame = recommend_vpa(usage, events, checked=True)
        modelled, model_cpu = time.perf_counter(), _cpu_s()
        output.write_text(render(frame, OutputFormat.json))
        written = time.perf_counter()
        result[model] = {
            "recommendations": len(frame),
            "model_s": round(modelled - started, 2),
            "model_cpu_s": round(model_cpu - cpu, 2),
            "write_s": round(written - modelled, 2),
            "first_read_total_s": round(loaded - began + written - started, 2),
            "peak_rss_mib": _peak_mib(),  # so far: which phase set the peak
        }
    del usage, events, frame  # the cache holds the history, as the service's does
    first_pass_peak = _peak_mib()  # before a pass resets the high-water mark
    result["next_passes"] = [
        next_pass(cache, settings, now + settings.step * later, prometheus_pid) for later in (1, 2)
    ]
    passes = [p["pass_peak_rss_mib"] or 0 for p in result["next_passes"]]
    result["peak_rss_mib"] = max(first_pass_peak, _peak_mib(), *passes)
    return result


def next_pass(
    cache: Any, settings: Any, later: datetime, prometheus_pid: int | None
) -> dict[str, Any]:
    """The service's next pass at `later`: the history cache reads what is new and folds
    it into what it holds, then the VPA model refits (as `tailor recommender` does). Its
    own peak RSS is counted from the pass's start (the kernel's high-water mark reset)."""
    from recommender.recommend import recommend_vpa

    phase_peak = _reset_peak()
    served = cpu_seconds(prometheus_pid) if prometheus_pid else None
    began, cpu = time.perf_counter(), _cpu_s()
    usage, events = cache.load(settings, later)
    read, read_cpu = time.perf_counter(), _cpu_s()
    read_peak = _hwm_mib() if phase_peak else None
    frame = recommend_vpa(usage, events, checked=True)
    done, done_cpu = time.perf_counter(), _cpu_s()
    pass_: dict[str, Any] = {
        "partial_reads": cache.partial_reads,
        "in_place_folds": cache.in_place_folds,
        "read_s": round(read - began, 2),
        "read_cpu_s": round(read_cpu - cpu, 2),
        "vpa_model_s": round(done - read, 2),
        "vpa_model_cpu_s": round(done_cpu - read_cpu, 2),
        "recommendations": len(frame),
        "usage_rows": len(usage),
        "read_peak_rss_mib": read_peak,
        "pass_peak_rss_mib": _hwm_mib() if phase_peak else None,
    }
    if served is not None and prometheus_pid:
        pass_["prometheus_cpu_s"] = round(cpu_seconds(prometheus_pid) - served, 2)
    return pass_


def _reset_peak() -> bool:
    """Reset this process's peak RSS (Linux: clear_refs 5); False where that is refused."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _hwm_mib() -> int:
    """Peak RSS since the last `_reset_peak` (VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return 0


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_mib() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(data: Path, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A real Prometheus on the backfilled data, on a free loopback port."""
    from tests.cluster.prometheus import EMPTY_SCRAPE_CONFIG, _free_port, _wait_ready

    config = workdir / "prometheus.yml"
    config.write_text(EMPTY_SCRAPE_CONFIG)
    port = _free_port()
    log = (workdir / "prometheus.log").open("ab")
    process = subprocess.Popen(
        [
            shutil.which("prometheus") or "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=3650d",
            "--query.timeout=30m",  # a shared, saturated machine: no 503 for slow answers
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    if not _wait_ready(url, process):
        process.terminate()
        raise RuntimeError(f"prometheus did not start on {data}; log in {workdir}")
    return process, url


def bench_size(count: int, runs: int, workdir: Path, partial: bool = False) -> dict[str, Any]:
    if partial:  # the containers backfilled so far (`containers` says how many)
        data = fleet.snapshot(count, workdir / "data")
    else:
        data = fleet.backfilled(count, shutil.which("promtool") or "promtool")
    process, url = serve(data, workdir)
    results = []
    try:
        for _ in range(runs):  # each run a fresh process: its peak RSS is its own
            argv = [sys.executable, "-m", "benchmarks.bench_prometheus", "--one", "--url", url]
            argv += ["--output", str(workdir / "recommendations.json")]
            argv += ["--prometheus-pid", str(process.pid)]
            served = cpu_seconds(process.pid)
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"run failed:\n{done.stderr[-3000:]}")
            run = json.loads(done.stdout.strip().splitlines()[-1])
            run["prometheus_cpu_s"] = round(cpu_seconds(process.pid) - served, 1)
            results.append(run)
    finally:
        process.terminate()
        process.wait(timeout=60)
    return {"runs": results, "median_query_s": statistics.median(r["query_s"] for r in results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 2_000])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--cached-only", action="store_true")
    parser.add_argument(
        "--partial",
        action="store_true",
        help="measure a size whose backfill is under way on the containers it has so far",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--prometheus-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.url, args.output, args.prometheus_pid)))
        return
    sizes: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-prometheus-") as folder:
        for count in args.sizes:
            cached = (fleet.CACHE / f"v{fleet.VERSION}-n{count}" / "done").exists()
            partial = args.partial and not cached
            if args.cached_only and not cached and not partial:
                sizes[str(count)] = {"skipped": "not backfilled yet (run without --cached-only)"}
                continue
            workdir = Path(folder) / str(count)
            workdir.mkdir()
            sizes[str(count)] = {
                **bench_size(count, args.runs, workdir, partial),
                "partial": partial,
            }
    biggest = sizes.get(str(GOALS["containers"]), {})
    result = {
        "benchmark": "prometheus",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "history": "8 days at 5 minutes, one container per workload, 100 per namespace",
        "sizes": sizes,
        "goals": {
            **GOALS,
            "first_read_met": all(
                run[model]["first_read_total_s"] < GOALS["first_read_s"]
                for run in biggest["runs"]
                for model in ("vpa", "forecast")
            )
            if "runs" in biggest
            else None,
        },
    }
    emit(result, args.out)


if __name__ == "__main__":
    main()
