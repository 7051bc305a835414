"""The updater's pass at 10,000 pods on 500 nodes: decision time and API reads.

1. **Decisions** (`--pods`, default 10,000 on `--nodes` 500): `updater.follow.follow_once`
   on synthetic objects (`benchmarks.updater_fleet`) through an in-memory cluster port,
   a schedule asking every workload for more than it requests, so every pod is planned,
   fit-checked against its node and resized (dry run). CPU seconds of the pass, less
   those spent inside the port (the fake copying objects, as a client decodes them):
   what the updater itself costs. Calls per port method are counted.
2. **API requests** (`--api-pods`, default 200 and 400, 20 per node): the same pass
   through `tailor.kube.Cluster` against a real kube-apiserver (the tests' control
   plane), bare pods bound to registered nodes and marked Running (no owner: the
   controller-manager would collect them), each scheduled by name. The pass's client
   counts what it sends; the API server's `apiserver_request_total`, read before and
   after, says what it served in that time (its own admission LISTs included). Reads
   must not grow with the pods: one LIST per kind, no per-pod GET.

Goal: decisions < 1 s at 10,000 pods; reads bounded. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.report import emit
from benchmarks.updater_fleet import (
    NOW,
    REQUESTS,
    Counted,
    Fleet,
    node_objects,
    schedule_rows,
    synthetic_cluster,
)
from tailor.kube import Cluster
from tests.cluster import toolchain
from tests.cluster.controlplane import ControlPlane, wait_for_default_namespace
from tests.cluster.rawapi import RawApi
from updater.follow import PassOptions, follow_once

DECISION_GOAL_S = 1.0


def decisions(fleet: Fleet, runs: int) -> dict[str, Any]:
    """CPU seconds of passes over the synthetic fleet, without the port's own."""
    passes: list[dict[str, Any]] = []
    decision_seconds: list[float] = []
    for _ in range(runs):
        cluster, rows = synthetic_cluster(fleet), schedule_rows(fleet)
        port = Counted(cluster)
        wall, cpu = time.perf_counter(), time.process_time()
        outcomes = follow_once(port.port(), rows, NOW, PassOptions(dry_run=True))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        decision_seconds.append(cpu - port.cpu_seconds)
        passes.append(
            {
                "pass_cpu_s": round(cpu, 3),
                "pass_wall_s": round(wall, 3),
                "port_cpu_s": round(port.cpu_seconds, 3),
                "decisions_cpu_s": round(cpu - port.cpu_seconds, 3),
                "port_calls": dict(port.calls),
                "actions": dict(Counter(o.action.value for o in outcomes)),
            }
        )
    median = round(statistics.median(decision_seconds), 3)
    return {
        "pods": fleet.pods,
        "nodes": fleet.nodes,
        "decisions_cpu_s": median,
        "decisions_cpu_us_per_pod": round(median / fleet.pods * 1e6, 1),
        "passes": passes,
    }


def write_decisions(fleet: Fleet, path: Path) -> None:
    """One pass's every outcome (in order, all fields) and every write sent, one JSON line
    each: two versions of the updater decide alike when their files are byte-identical."""
    cluster, rows = synthetic_cluster(fleet), schedule_rows(fleet)
    port = Counted(cluster, keep_writes=True)
    outcomes = follow_once(port.port(), rows, NOW, PassOptions(dry_run=True))
    with path.open("w") as out:
        for outcome in outcomes:
            out.write(json.dumps(["outcome", *dataclasses.astuple(outcome)]) + "\n")
        for write in port.writes:
            out.write(json.dumps(["write", *write], sort_keys=True) + "\n")
        out.write(json.dumps(["why_nothing", outcomes.why_nothing, repr(outcomes.hpas)]) + "\n")


def request_counts(api: RawApi) -> Counter[tuple[str, str]]:
    """apiserver_request_total summed by (verb, resource[/subresource])."""
    serialized = api.api_client.param_serialize(
        method="GET", resource_path="/metrics", auth_settings=["BearerToken"]
    )
    text = api.api_client.call_api(*serialized).read().decode()
    counts: Counter[tuple[str, str]] = Counter()
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                labels = sample.labels
                resource = labels.get("resource", "")
                if labels.get("subresource"):
                    resource += "/" + labels["subresource"]
                counts[(labels.get("verb", ""), resource)] += int(sample.value)
    return counts


def _create(api: RawApi, path: str, body: dict[str, Any]) -> None:
    try:
        api.create(path, body)
    except ApiException as error:
        if error.status != 409:  # there from a smaller fleet
            raise


class SentRequests:
    """Counts the requests one API client sends, by method and path with names elided."""

    def __init__(self, client: Any) -> None:
        self.counts: Counter[str] = Counter()
        self._call = client.call_api
        client.call_api = self._counted

    def _counted(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        path = re.sub(r"/namespaces/[^/]+", "/namespaces/*", url.split("?")[0].split("//", 1)[-1])
        path = re.sub(r"/(pods|nodes)/[^/]+", r"/\1/*", path.split("/", 1)[-1])
        self.counts[f"{method} /{path}"] += 1
        return self._call(method, url, *args, **kwargs)


def populate(api: RawApi, fleet: Fleet, start: int = 0) -> None:
    """Nodes, namespaces and Running pods `start`.. of `fleet` on the real API server."""
    for name, found in node_objects(fleet).items():
        _create(api, "/api/v1/nodes", {"metadata": {"name": name}})
        api.request("PATCH", f"/api/v1/nodes/{name}/status", {"status": found["status"]},
                    content_type="application/merge-patch+json")  # fmt: skip
    for namespace in dict.fromkeys(fleet.workload_of(i)[0] for i in range(fleet.pods)):
        _create(api, "/api/v1/namespaces", {"metadata": {"name": namespace}})
    for index in range(start, fleet.pods):
        namespace, workload = fleet.workload_of(index)
        name = fleet.pod_name(index)
        resources = {"requests": REQUESTS, "limits": {"memory": "256Mi"}}
        api.create(f"/api/v1/namespaces/{namespace}/pods", {
            "metadata": {"name": name, "labels": {"app": workload}},
            "spec": {"nodeName": fleet.node_name(index), "containers": [
                {"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": resources}]},
        })  # fmt: skip
        status = {"phase": "Running", "containerStatuses": [
            {"name": "app", "ready": True, "restartCount": 0, "image": "pause", "imageID": "",
             "state": {"running": {}}, "resources": {"requests": REQUESTS}}]}  # fmt: skip
        api.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                    {"status": status}, content_type="application/merge-patch+json")  # fmt: skip


def api_requests(sizes: list[int]) -> dict[str, Any]:
    """Requests one dry-run pass sends a real API server, per fleet size."""
    folder = Path(tempfile.mkdtemp(prefix="bench-updater-"))
    plane = ControlPlane(folder, toolchain.control_plane_bin_dir(), toolchain.etcd_binary())
    plane.start()
    results = []
    try:
        wait_for_default_namespace(plane, timeout=180)  # a busy machine is slow to start it
        with plane.api_client() as client:
            api, done = RawApi(client), 0
            for size in sorted(sizes):
                fleet = Fleet(pods=size, nodes=max(1, size // 20))
                populate(api, fleet, start=done)
                done = size
                before = request_counts(api)
                with plane.api_client() as own:  # the pass's own client, its requests counted
                    counted = SentRequests(own)
                    outcomes = follow_once(
                        Cluster(own),
                        schedule_rows(fleet, bare=True),
                        NOW,
                        PassOptions(dry_run=True),
                    )
                sent = request_counts(api) - before
                # less the control plane's own traffic: leader leases, discovery, our /metrics
                seen = {k: n for k, n in sent.items() if k[1][:1].isalpha() and k[1] != "leases"}
                reads = {k: n for k, n in counted.counts.items() if k.startswith("GET ")}
                results.append(
                    {
                        "pods": size,
                        "nodes": fleet.nodes,
                        "resized": sum(o.action.value == "resize" for o in outcomes),
                        "client_requests": dict(counted.counts),
                        "read_requests": sum(reads.values()),
                        "apiserver_saw": {f"{v} {r}": n for (v, r), n in seen.items()},
                    }
                )
    finally:
        plane.stop()
    return {"runs": results, "reads_bounded": len({r["read_requests"] for r in results}) == 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--api-pods", type=int, nargs="*", default=[200, 400])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--decisions-out",
        type=Path,
        default=None,
        help="write one pass's outcomes and writes to this file (JSON lines) and stop",
    )
    args = parser.parse_args(argv)
    if args.decisions_out is not None:
        write_decisions(Fleet(pods=args.pods, nodes=args.nodes), args.decisions_out)
        return 0
    result: dict[str, Any] = {
        "benchmark": "updater",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average": os.getloadavg(),
            "shared": True,
        },
        "decisions": decisions(Fleet(pods=args.pods, nodes=args.nodes), args.runs),
    }
    if args.api_pods:
        result["api"] = api_requests(args.api_pods)
    result["goals"] = {
        "decisions_s": DECISION_GOAL_S,
        "decisions_met": result["decisions"]["decisions_cpu_s"] < DECISION_GOAL_S,
        "reads_bounded": result.get("api", {}).get("reads_bounded"),
    }
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
