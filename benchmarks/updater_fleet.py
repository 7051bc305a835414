"""The objects of the updater benchmark: pods spread over nodes, a schedule for them all,
and a cluster port that counts what a pass reads and writes.

Every workload is a Deployment's ReplicaSet of `pods_per_workload` one-container pods,
`workloads_per_namespace` to a namespace, the pods dealt round-robin over the nodes.
The schedule asks each workload for more CPU and memory than its pods request (each its
own amounts, as forecasts differ), so every pod is planned, fit-checked against its node
and resized: the pass's heaviest case.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from tailor.cluster_port import UpdaterCluster
from tailor.schedule_file import ScheduleRow
from tests.in_memory_cluster import InMemoryCluster, Key
from tests.updater.pods import Obj, container, container_status, node, pod

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
Mi = 2**20
REQUESTS = {"cpu": "100m", "memory": "128Mi"}
TARGET_CPU, TARGET_MEMORY = 0.15, 160 * Mi


@dataclass(frozen=True)
class Fleet:
    """`pods` pods on `nodes` nodes, in workloads of `pods_per_workload`."""

    pods: int = 10_000
    nodes: int = 500
    pods_per_workload: int = 10
    workloads_per_namespace: int = 50

    def workload_of(self, index: int) -> tuple[str, str]:
        """(namespace, Deployment name) of pod `index`."""
        workload = index // self.pods_per_workload
        return f"team-{workload // self.workloads_per_namespace}", f"app-{workload}"

    def pod_name(self, index: int) -> str:
        return f"{self.workload_of(index)[1]}-6d4cf56db6-{index:05d}"

    def node_name(self, index: int) -> str:
        return f"node-{index % self.nodes:04d}"

    def bare_pods(self) -> list[tuple[str, str]]:
        return [(self.workload_of(i)[0], self.pod_name(i)) for i in range(self.pods)]

    def workloads(self) -> list[tuple[str, str]]:
        seen = dict.fromkeys(self.workload_of(i) for i in range(self.pods))
        return list(seen)


def pod_object(fleet: Fleet, index: int) -> Obj:
    """Running pod `index` as the API server lists it, owned by its ReplicaSet."""
    namespace, workload = fleet.workload_of(index)
    found = pod(
        [container("app", REQUESTS, {"memory": "256Mi"})],
        name=fleet.pod_name(index),
        statuses=[container_status("app", REQUESTS, REQUESTS)],
        node=fleet.node_name(index),
    )
    found["metadata"]["namespace"] = namespace
    found["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{workload}-6d4cf56db6",
         "controller": True, "uid": f"rs-{workload}"}
    ]  # fmt: skip
    return found


def node_objects(fleet: Fleet) -> dict[str, Obj]:
    """Nodes with room for their share of pods after the resize (16 cores, 64 GiB)."""
    names = map(fleet.node_name, range(fleet.nodes))
    return {name: node(name, cpu="16", memory="64Gi") for name in names}


def schedule_rows(fleet: Fleet, bare: bool = False) -> list[ScheduleRow]:
    """One period in force for every workload's container: more than it requests. `bare`:
    pods without an owner, each its own workload (keyed by the pod's name)."""
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    period = {
        "container": "app",
        "start": (NOW - timedelta(hours=1)).strftime(stamp),
        "end": (NOW + timedelta(hours=1)).strftime(stamp),
    }

    def targets(index: int) -> dict[str, float]:  # each workload its own forecast
        memory = TARGET_MEMORY + index * 2**10
        return {"cpu": TARGET_CPU + index / 10_000, "memory": memory, "memoryLimit": 2 * memory}

    return [
        ScheduleRow.model_validate(
            {"namespace": namespace, "workload": workload, **period, **targets(index % 1000)}
        )
        for index, (namespace, workload) in enumerate(
            fleet.bare_pods() if bare else fleet.workloads()
        )
    ]


@dataclass
class IndexedCluster(InMemoryCluster):
    """The in-memory cluster with pods found by key in a dict: its list scan per write
    would make a 10,000-pod pass quadratic in the benchmark's own fake."""

    _index: dict[Key, int] = field(default_factory=dict)

    def _pod_index(self, key: Key) -> int | None:
        if len(self._index) != len(self.pod_objects):
            self._index = {
                (str(p["metadata"]["namespace"]), str(p["metadata"]["name"])): i
                for i, p in enumerate(self.pod_objects)
            }
        return self._index.get(key)


WRITES = ("resize", "evict", "annotate")


def _written(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A write's arguments as plain JSON: the pod by its key, the rest as sent."""
    pod, *rest = args
    key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    return [key, *rest, kwargs]


class Counted:
    """A cluster port that counts each call by method and the CPU seconds spent inside."""

    def __init__(self, inner: Any, keep_writes: bool = False) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()
        self.cpu_seconds = 0.0
        self.writes: list[tuple[str, Any]] = []  # (method, its arguments), if kept
        self._keep_writes = keep_writes

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found):
            return found
        method: Callable[..., Any] = found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            if self._keep_writes and name in WRITES:
                self.writes.append((name, _written(args, kwargs)))
            start = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                self.cpu_seconds += time.process_time() - start

        # made once: its making is outside the timed call, and would count as the pass's
        setattr(self, name, counted)
        return counted

    def port(self) -> UpdaterCluster:
        return cast(UpdaterCluster, self)


def synthetic_cluster(fleet: Fleet) -> IndexedCluster:
    return IndexedCluster(
        pod_objects=[pod_object(fleet, i) for i in range(fleet.pods)],
        nodes_by_name=node_objects(fleet),
    )
