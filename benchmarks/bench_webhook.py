"""The admission webhook under a fixed-rate load, beside upstream's admission controller.

One real kube-apiserver (the tests' control plane, started here) holds 20 Deployments,
their ReplicaSets and a VPA each with a recommendation; both webhooks watch it and
serve the same certificate. vegeta sends AdmissionReviews of those Deployments' pods
(the API server's own shape, 20 distinct pods round-robin) over TLS on loopback with
keep-alive, at a fixed rate. Per webhook, alternating ours and upstream's each round:

1. 100 requests/s for 20 s: latency p50 / p99 (goal: ours within 2x of upstream's p50);
2. 1,000 requests/s for 20 s: all answered, p99 (goal < 25 ms);
3. overload, 3,000 requests/s for 10 s, then 15 s idle: resident memory before and
   after (the whole process tree; goal: after within 1.5x of before).

Each phase also reports the webhook's CPU seconds (its whole process tree, from the
kernel's accounting) per answered review. `--baseline DIR` runs ours a second time from
another checkout (e.g. `git worktree add DIR main`) in the same rounds, so a change is
measured against what it changes, alternating, on the same busy machine.

Prints one JSON object (`--out FILE` also writes it) with every round and the medians
and ratios. The machine is shared: quote ratios, not absolute figures.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import emit
from benchmarks.webhook_servers import (
    REPO,
    ToolUnavailable,
    attack,
    ours,
    running,
    upstream,
    upstream_admission_controller,
    vegeta,
)
from tests.admission.burst import populate, review_body
from tests.cluster import toolchain
from tests.cluster.certs import CertificateAuthority
from tests.cluster.controlplane import ControlPlane, wait_for_default_namespace
from tests.cluster.crds import install_crds
from tests.cluster.processes import free_port
from tests.cluster.rawapi import RawApi

APPS = 20
P99_GOAL_MS, P50_RATIO_GOAL, RSS_RATIO_GOAL = 25.0, 2.0, 1.5


def targets_file(url: str, folder: Path) -> Path:
    path = folder / f"targets-{abs(hash(url))}.jsonl"
    header = {"Content-Type": ["application/json"]}
    with path.open("w") as sink:
        for index in range(APPS):
            body = base64.b64encode(review_body(index)).decode()
            sink.write(json.dumps({"method": "POST", "url": url, "body": body, "header": header}))
            sink.write("\n")
    return path


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    latencies = report["latencies"]
    return {
        "requests": report["requests"],
        "rate": round(report["rate"], 1),
        "throughput": round(report["throughput"], 1),
        "success": report["success"],
        "status_codes": report["status_codes"],
        "p50_ms": latencies["50th"] / 1e6,
        "p99_ms": latencies["99th"] / 1e6,
        "max_ms": latencies["max"] / 1e6,
    }


def _phase(webhook: Any, targets: Path, ca: Path, rate: int, seconds: float, folder: Path) -> Any:
    """One fixed-rate phase's figures, with the webhook's CPU per answered review."""
    begun = webhook.cpu_seconds
    figures = _figures(attack(targets, ca, rate, seconds, folder, f"r{rate}"))
    cpu = webhook.cpu_seconds - begun
    answered = figures["status_codes"].get("200", 0)
    figures["cpu_seconds"] = round(cpu, 3)
    figures["cpu_ms_per_review"] = round(1000 * cpu / answered, 3) if answered else None
    return figures


def measure(webhook: Any, targets: Path, ca: Path, folder: Path, short: bool) -> dict[str, Any]:
    seconds = 5 if short else 20
    attack(targets, ca, 100, 3, folder, "warm")
    result: dict[str, Any] = {"rate_100": _phase(webhook, targets, ca, 100, seconds, folder)}
    result["rate_1000"] = _phase(webhook, targets, ca, 1000, seconds, folder)
    time.sleep(5)
    before = webhook.rss
    overload = attack(targets, ca, 3000, 5 if short else 10, folder, "r3000")
    time.sleep(15)
    after = webhook.rss
    result["overload_3000"] = _figures(overload)
    result["rss_before_mib"], result["rss_after_mib"] = before / 2**20, after / 2**20
    result["rss_ratio"] = after / before if before else None
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--short", action="store_true", help="5 s phases (a smoke run)")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout of ours, measured in the same rounds"
    )
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-webhook-"))
    vegeta()
    try:
        upstream_binary: Path | None = upstream_admission_controller()
        why_not = None
    except ToolUnavailable as error:
        upstream_binary, why_not = None, str(error)
    plane = ControlPlane(
        folder / "cluster", toolchain.control_plane_bin_dir(), toolchain.etcd_binary()
    )
    plane.start()
    try:
        wait_for_default_namespace(plane)
        api = RawApi(plane.api_client())
        install_crds(api)
        populate(api, APPS)
        result = run_rounds(plane, upstream_binary, folder, args.rounds, args.short, args.baseline)
    finally:
        plane.stop()
    result["upstream_unavailable"] = why_not
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                         "load_average": os.getloadavg(), "shared": True}  # fmt: skip
    emit(result, args.out)
    return 0


def run_rounds(
    plane: ControlPlane,
    upstream_binary: Path | None,
    folder: Path,
    rounds: int,
    short: bool,
    baseline: Path | None = None,
) -> dict[str, Any]:
    authority = CertificateAuthority(folder / "ca")
    pair = authority.issue("webhook", common_name="webhook", hosts=("127.0.0.1",), server=True)
    ca = authority.pair.cert_file
    names = ["ours", "upstream", *(["baseline"] if baseline is not None else [])]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for round_ in range(rounds):
        order = names if round_ % 2 == 0 else names[::-1]
        for name in order:
            port, metrics = free_port(), free_port()
            code = baseline if name == "baseline" and baseline is not None else REPO
            if name in ("ours", "baseline"):
                argv = ours(plane.kubeconfig, pair.cert_file, pair.key_file, port, metrics)
            elif upstream_binary is not None:
                keys = (pair.cert_file, pair.key_file)
                argv = upstream(upstream_binary, plane.kubeconfig, ca, *keys, port, metrics)
            else:
                continue
            url = f"https://127.0.0.1:{port}/mutate"
            log = folder / f"{name}-{round_}.log"
            with running(name, argv, url, ca, log, code) as webhook:
                time.sleep(3)  # watches settled
                runs[name].append(measure(webhook, targets_file(url, folder), ca, folder, short))
    return {"runs": runs, "summary": summarize(runs)}


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    def median(name: str, *path: str) -> float | None:
        values = []
        for run in runs[name]:
            value: Any = run
            for key in path:
                value = value[key]
            if value is not None:  # no review answered: no CPU per review
                values.append(value)
        return statistics.median(values) if values else None

    summary: dict[str, Any] = {}
    for name in runs:
        summary[name] = {
            "p50_ms_at_100": median(name, "rate_100", "p50_ms"),
            "p99_ms_at_100": median(name, "rate_100", "p99_ms"),
            "p50_ms_at_1000": median(name, "rate_1000", "p50_ms"),
            "p99_ms_at_1000": median(name, "rate_1000", "p99_ms"),
            "success_at_1000": median(name, "rate_1000", "success"),
            "cpu_ms_per_review_at_100": median(name, "rate_100", "cpu_ms_per_review"),
            "cpu_ms_per_review_at_1000": median(name, "rate_1000", "cpu_ms_per_review"),
            "rss_ratio_after_overload": median(name, "rss_ratio"),
        }
    ours_, theirs = summary["ours"], summary.get("upstream", {})
    p50_ratio = (
        ours_["p50_ms_at_100"] / theirs["p50_ms_at_100"] if theirs.get("p50_ms_at_100") else None
    )
    summary["p50_ratio_ours_to_upstream_at_100"] = p50_ratio
    for rate in (100, 1000):
        key = f"cpu_ms_per_review_at_{rate}"
        mine, upstream_cpu = ours_[key], theirs.get(key)
        summary[f"cpu_ratio_ours_to_upstream_at_{rate}"] = (
            mine / upstream_cpu if mine and upstream_cpu else None
        )
        before = summary.get("baseline", {}).get(key)
        summary[f"cpu_ratio_ours_to_baseline_at_{rate}"] = (
            mine / before if mine and before else None
        )
    summary["goals"] = {
        "all_answered_at_1000": ours_["success_at_1000"] == 1.0,
        "p99_under_25ms_at_1000": (ours_["p99_ms_at_1000"] or 1e9) < P99_GOAL_MS,
        "p50_within_2x_of_upstream_at_100": p50_ratio is not None and p50_ratio <= P50_RATIO_GOAL,
        "rss_after_overload_within_1_5x": (ours_["rss_ratio_after_overload"] or 1e9)
        <= RSS_RATIO_GOAL,
    }
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
