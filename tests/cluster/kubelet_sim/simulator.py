"""The kubelet simulator's edge: registers nodes and runs `KubeletEngine` against
a real API server from a background thread (a 0.2 s poll loop).

Typical use (the `kubelet_sim` fixture does the start / stop):

    sim = KubeletSimulator(cluster.api_client()).start()
    sim.register_node("node-a", cpu="4", memory="8Gi")
    sim.set_usage("default", "web-*", "app", UsageSeries((0.5,), (300 * 2**20,)))
    ...
    sim.stop()   # deletes its nodes and their pods, raises if the loop hit errors
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

import kubernetes.client
from kubernetes.client.exceptions import ApiException

from tests.cluster.kubelet_sim import podstatus as ps
from tests.cluster.kubelet_sim.engine import EngineConfig, KubeletEngine, SimNode
from tests.cluster.kubelet_sim.metrics import ContainerSample, MetricsServer, SimulatorCollector
from tests.cluster.kubelet_sim.quantities import Resources, cpu_millis, memory_bytes
from tests.cluster.kubelet_sim.usage import UsageSeries
from tests.cluster.rawapi import MERGE_PATCH, RawApi, pod_path

log = logging.getLogger(__name__)
SIM_LABEL = "kube-tailor.io/kubelet-sim"
_NOT_READY_TAINT = "node.kubernetes.io/not-ready"
_EXPECTED_HTTP = (404, 409)  # the pod changed or went away between list and write


class SimulatorError(RuntimeError):
    """The simulator's loop failed; carries the errors it saw."""


class KubeletSimulator:
    """Plays the kubelet for the nodes registered through it (see module docstring)."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        *,
        config: EngineConfig | None = None,
        poll_interval: float = 0.2,
        metrics_port: int | None = None,
        kubelet_version: str = "v1.36.3",
    ) -> None:
        """metrics_port: None serves no metrics, 0 a free port on 127.0.0.1."""
        self.api_client = api_client
        self.api = RawApi(api_client)
        self.engine = KubeletEngine(config)
        self.poll_interval = poll_interval
        self.kubelet_version = kubelet_version
        self.errors: list[str] = []
        self.status_writes = 0
        self._metrics_port = metrics_port
        self._metrics: MetricsServer | None = None
        self._lock = threading.RLock()
        self._tick_done = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._published_pressure: dict[str, bool] = {}
        self._passes_done = 0

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> KubeletSimulator:
        if self._metrics_port is not None:
            self._metrics = MetricsServer(SimulatorCollector(self.samples), self._metrics_port)
        self._thread = threading.Thread(target=self._run, name="kubelet-sim", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, cleanup: bool = True, raise_errors: bool = True) -> None:
        """Stop the loop; with cleanup, delete our nodes and the pods bound to them."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None
        if cleanup:
            self._delete_nodes_and_pods()
        if raise_errors and self.errors:
            raise SimulatorError("kubelet simulator loop errors:\n" + "\n".join(self.errors))

    def __enter__(self) -> KubeletSimulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(raise_errors=exc[0] is None)

    @property
    def metrics_url(self) -> str:
        if self._metrics is None:
            raise RuntimeError("the simulator was started without metrics_port")
        return self._metrics.url

    # -- what tests configure ------------------------------------------------
    def register_node(
        self,
        name: str,
        *,
        cpu: str | int = "4",
        memory: str = "8Gi",
        pods: int = 110,
        allocatable_cpu: str | int | None = None,
        allocatable_memory: str | None = None,
        labels: dict[str, str] | None = None,
        cpu_manager_policy: str = "none",
        memory_manager_policy: str = "None",
    ) -> None:
        """Create (or adopt) Node `name`, post a Ready status and drop the not-ready taint.

        Returns once the API server shows the node Ready and untainted.
        """
        capacity = Resources(cpu_millis(cpu), memory_bytes(memory))
        allocatable = Resources(
            cpu_millis(allocatable_cpu if allocatable_cpu is not None else cpu),
            memory_bytes(allocatable_memory if allocatable_memory is not None else memory),
        )
        node = SimNode(
            name,
            capacity,
            allocatable,
            max_pods=pods,
            cpu_manager_static=cpu_manager_policy == "static",
            memory_manager_static=memory_manager_policy == "Static",
        )
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    SIM_LABEL: "true",
                    **(labels or {}),
                },
            },
        }
        try:
            self.api.create("/api/v1/nodes", body)
        except ApiException as error:
            if error.status != 409:
                raise
        with self._lock:
            self.engine.add_node(node)
        self._publish_node(node)
        self._remove_not_ready_taint(name)

    def update_node_allocatable(self, name: str, *, cpu: str | int, memory: str) -> None:
        """Change what the node offers (e.g. reserved resources changed); Deferred
        resizes are retried against it."""
        with self._lock:
            node = self.engine.nodes[name]
            node.allocatable = Resources(cpu_millis(cpu), memory_bytes(memory))
            self.engine.request_retry()
        self._publish_node(node)

    def hold_back(self, name: str, *, cpu: str | int, memory: str) -> None:
        """Admit pods and resizes on `name` against less than its Node object says, as a
        kubelet does between a change of its reservations and its next node status: a resize
        the updater finds room for (from the Node) is then Deferred here.
        `update_node_allocatable` ends it."""
        with self._lock:
            self.engine.nodes[name].allocatable = Resources(cpu_millis(cpu), memory_bytes(memory))

    def set_usage(self, namespace: str, pod: str, container: str, series: UsageSeries) -> None:
        """Usage of a container; `pod` may be a prefix ending in '*' (Deployment pods)."""
        with self._lock:
            self.engine.set_usage(namespace, pod, container, series)

    def hold_actuation(self, namespace: str, pod: str) -> None:
        """Accepted resizes of this pod stay InProgress until `release_actuation`."""
        with self._lock:
            self.engine.held.add((namespace, pod))

    def release_actuation(self, namespace: str, pod: str) -> None:
        with self._lock:
            self.engine.held.discard((namespace, pod))

    def wait_ticks(self, count: int = 2, timeout: float = 10.0) -> None:
        """Block until `count` more full passes of the loop finished (their writes included)."""
        with self._tick_done:
            target = self._passes_done + count
            if not self._tick_done.wait_for(lambda: self._passes_done >= target, timeout):
                raise TimeoutError(f"kubelet simulator did not finish {count} passes in {timeout}s")

    def samples(self) -> list[ContainerSample]:
        with self._lock:
            return self.engine.samples()

    # -- the loop -------------------------------------------------------------
    def _run(self) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self._pass()
            except Exception as error:  # keep playing the kubelet; report at stop()
                log.exception("kubelet simulator pass failed")
                self.errors.append(f"{type(error).__name__}: {error}")
                if len(self.errors) > 50:
                    return
            self._stopping.wait(max(0.0, self.poll_interval - (time.monotonic() - started)))

    def _pass(self) -> None:
        pods = self.api.get("/api/v1/pods")["items"]
        with self._lock:
            changed, deletions = self.engine.sync(pods, time.time())
            pressure = self.engine.node_pressure()
        for pod in deletions:
            self._delete_pod(pod)
        for pod in changed:
            self._write_status(pod)
        for name, under_pressure in pressure.items():
            if self._published_pressure.get(name) != under_pressure:
                self._publish_node(self.engine.nodes[name])
        with self._tick_done:
            self._passes_done += 1
            self._tick_done.notify_all()

    def _write_status(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            self.api.replace(pod_path(meta["namespace"], meta["name"], "status"), pod)
            self.status_writes += 1
        except ApiException as error:
            if error.status not in _EXPECTED_HTTP:
                raise

    def _delete_pod(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}}
        try:
            self.api.delete(pod_path(meta["namespace"], meta["name"]), body)
        except ApiException as error:
            if error.status not in _EXPECTED_HTTP:
                raise

    def _publish_node(self, node: SimNode) -> None:
        def amounts(resources: Resources) -> dict[str, str]:
            return {
                "cpu": f"{resources.cpu}m",
                "memory": str(resources.memory),
                "pods": str(node.max_pods),
            }

        status = ps.node_status(
            capacity=amounts(node.capacity),
            allocatable=amounts(node.allocatable),
            now=time.time(),
            memory_pressure=node.memory_pressure,
            kubelet_version=self.kubelet_version,
        )
        status["addresses"] = [
            {"type": "InternalIP", "address": "127.0.0.1"},
            {"type": "Hostname", "address": node.name},
        ]
        self.api.patch(f"/api/v1/nodes/{node.name}/status", {"status": status})
        self._published_pressure[node.name] = node.memory_pressure

    def _remove_not_ready_taint(self, name: str, timeout: float = 10.0) -> None:
        # The TaintNodesByCondition admission plugin adds the taint on creation.
        deadline = time.monotonic() + timeout
        while True:
            node = self.api.get(f"/api/v1/nodes/{name}")
            taints = node["spec"].get("taints") or []
            kept = [t for t in taints if t.get("key") != _NOT_READY_TAINT]
            if len(kept) == len(taints):
                return
            body = {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "spec": {"taints": kept or None},
            }
            try:
                self.api.patch(f"/api/v1/nodes/{name}", body, MERGE_PATCH)
            except ApiException as error:
                if error.status != 409 or time.monotonic() > deadline:
                    raise

    def _delete_nodes_and_pods(self) -> None:
        names = set(self.engine.nodes)
        with contextlib.suppress(ApiException):
            for pod in self.api.get("/api/v1/pods")["items"]:
                if pod["spec"].get("nodeName") in names:
                    with contextlib.suppress(ApiException):
                        self._delete_pod(pod)
        for name in names:
            with contextlib.suppress(ApiException):
                self.api.delete(f"/api/v1/nodes/{name}")
