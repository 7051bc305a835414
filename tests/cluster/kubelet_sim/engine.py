"""The kubelet's bookkeeping for simulated nodes, without any API calls.

`KubeletEngine.sync(pods, now)` takes the pods bound to its nodes (as API
dicts) and answers what a kubelet would write back: pod statuses, pods to
delete for good, node memory-pressure changes. It keeps what the kubelet keeps
in memory and checkpoints: per pod the allocated and actuated resources, the
pending-resize state and the containers' usage. Decisions come from `rules`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from tests.cluster.kubelet_sim import rules
from tests.cluster.kubelet_sim.metrics import ContainerSample
from tests.cluster.kubelet_sim.quantities import (
    Resources,
    optional_cores,
    optional_memory,
    resources_of,
)
from tests.cluster.kubelet_sim.records import (
    POD_LEVEL,
    Json,
    PodRecord,
    SimNode,
    changes,
    desired_requirements,
    max_requests,
    pod_shape,
    requirements_of,
    resizable,
    same,
)
from tests.cluster.kubelet_sim.reporting import container_samples, pod_status, prune
from tests.cluster.kubelet_sim.usage import IDLE, ContainerRuntime, UsageSeries


@dataclass(frozen=True)
class EngineConfig:
    """Timing knobs; defaults are the kubelet's except where tests need speed."""

    actuation_delay: float = 0.0  # seconds between accepting a resize and applying it
    retry_period: float = 180.0  # periodic retry of Deferred resizes (kubelet: 3 min)
    eviction_threshold: int = 100 * 2**20  # memory.available hard threshold (kubelet: 100Mi)
    eviction_interval: float = 1.0  # at most one eviction per node per interval
    termination_delay: float = 0.0  # seconds before a graceful deletion is finished


class KubeletEngine:
    """See the module docstring. Not thread-safe: the simulator serialises calls."""

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.nodes: dict[str, SimNode] = {}
        self.records: dict[str, PodRecord] = {}
        self.usage: dict[tuple[str, str, str], UsageSeries] = {}
        self.held: set[tuple[str, str]] = set()
        self.ticks = 0
        self._retry_due = False
        self._last_retry = 0.0
        self._next_ip = 1

    # -- configuration from tests -----------------------------------------
    def add_node(self, node: SimNode) -> None:
        node.index = len(self.nodes) + 1
        self.nodes[node.name] = node
        self._retry_due = True

    def request_retry(self) -> None:
        """Re-evaluate Deferred resizes on the next pass (e.g. the node changed)."""
        self._retry_due = True

    def set_usage(self, namespace: str, pod: str, container: str, series: UsageSeries) -> None:
        """`pod` is a name or a prefix ending in '*' (for Deployment pods)."""
        self.usage[(namespace, pod, container)] = series

    def series_for(self, namespace: str, pod: str, container: str) -> UsageSeries:
        exact = self.usage.get((namespace, pod, container))
        if exact is not None:
            return exact
        matches = [
            (len(pattern), series)
            for (ns, pattern, name), series in self.usage.items()
            if ns == namespace
            and name == container
            and pattern.endswith("*")
            and pod.startswith(pattern[:-1])
        ]
        return max(matches, key=lambda match: match[0])[1] if matches else IDLE

    # -- the sync loop ------------------------------------------------------
    def sync(self, pods: list[Json], now: float) -> tuple[list[Json], list[Json]]:
        """One kubelet pass. Returns (pods whose status changed, pods to delete now)."""
        self.ticks += 1
        ours = {p["metadata"]["uid"]: p for p in pods if p["spec"].get("nodeName") in self.nodes}
        for uid in [uid for uid in self.records if uid not in ours]:
            del self.records[uid]
            self._retry_due = True
        deletions: list[Json] = []
        for uid, pod in ours.items():
            record = self.records.get(uid)
            if pod["metadata"].get("deletionTimestamp"):
                if record is None:
                    deletions.append(pod)
                    continue
                record.deleting_since = record.deleting_since or now
                if now - record.deleting_since >= self.config.termination_delay:
                    deletions.append(pod)
            if record is None:
                if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                record = self._admit(pod, now)
                self.records[uid] = record
            record.pod = pod
        running = [r for r in self.records.values() if r.running]
        for record in running:
            self._advance_usage(record, now)
        for record in running:
            if record.generation != record.evaluated_generation:
                record.evaluated_generation = record.generation
                self._evaluate_resize(record, now)
        self._retry_deferred(now)
        for record in running:
            self._actuate(record, now)
        for node in self.nodes.values():
            self._relieve_memory_pressure(node, now)
        changed = []
        for record in self.records.values():
            status = pod_status(record, now)
            if prune(status) != prune(record.pod.get("status") or {}):
                changed.append({**record.pod, "status": status})
        return changed, deletions

    def samples(self) -> list[ContainerSample]:
        """Current numbers of every container the metrics endpoint shows."""
        return container_samples(self.records.values())

    def node_pressure(self) -> dict[str, bool]:
        return {name: node.memory_pressure for name, node in self.nodes.items()}

    # -- admission ----------------------------------------------------------
    def _others(self, record: PodRecord | None, node: str) -> list[Resources]:
        """Requests of the other active pods: max(allocated, actuated) per container."""
        totals = []
        for other in self.records.values():
            if other is record or other.node != node or not other.running:
                continue
            counted = {
                name: {"requests": max_requests(other.allocated[name], other.actual.get(name))}
                for name in other.allocated
            }
            totals.append(rules.pod_requests(pod_shape(other.pod["spec"], counted)))
        return totals

    def _admit(self, pod: Json, now: float) -> PodRecord:
        meta, spec = pod["metadata"], pod["spec"]
        node = self.nodes[spec["nodeName"]]
        record = PodRecord(
            uid=meta["uid"],
            namespace=meta["namespace"],
            name=meta["name"],
            node=node.name,
            pod=pod,
            pod_ip=f"10.244.{node.index % 256}.{self._next_ip % 254 + 1}",  # valid, rarely reused
            evaluated_generation=int(meta.get("generation") or 1),
        )
        self._next_ip += 1
        requested = requirements_of(spec)
        decision = rules.admit_new_pod(
            rules.pod_requests(pod_shape(spec, requested)),
            self._others(None, node.name),
            node.limits(),
        )
        if decision.outcome is not rules.Outcome.ACCEPTED:
            record.terminal_reason, record.terminal_message = decision.reason, decision.message
            return record
        record.allocated = copy.deepcopy(requested)
        record.actual = copy.deepcopy(requested)
        for container in resizable(spec):
            record.runtimes[container["name"]] = ContainerRuntime(container["name"], now, now)
        return record

    # -- resizes --------------------------------------------------------------
    def _evaluate_resize(self, record: PodRecord, now: float) -> None:
        spec = record.pod["spec"]
        desired = requirements_of(spec)
        if same(desired, record.allocated):
            record.pending_reason, record.pending_since = "", None
            return
        decision = rules.decide_resize(
            pod_shape(spec, desired),
            self._others(record, record.node),
            self.nodes[record.node].limits(),
            guaranteed=record.guaranteed,
            cpu_changes=changes(desired, record.allocated, "cpu"),
            memory_changes=changes(desired, record.allocated, "memory"),
        )
        if decision.outcome is rules.Outcome.ACCEPTED:
            record.allocated = desired
            record.pending_reason, record.pending_since = "", None
            record.in_progress_generation = record.generation
            record.actuation_error = ""
            record.accepted_at, record.accepted_tick = now, self.ticks
            return
        if record.pending_reason != decision.reason or record.pending_since is None:
            record.pending_since = now
        record.pending_reason, record.pending_message = decision.reason, decision.message

    def _retry_deferred(self, now: float) -> None:
        periodic = now - self._last_retry >= self.config.retry_period
        if not (self._retry_due or periodic):
            return
        self._retry_due, self._last_retry = False, now
        deferred = {
            r.uid: r
            for r in self.records.values()
            if r.running and r.pending_reason == rules.DEFERRED
        }
        pending = [
            rules.PendingResize(
                r.uid,
                rules.is_increasing(
                    rules.pod_requests(pod_shape(r.pod["spec"], desired_requirements(r))),
                    rules.pod_requests(pod_shape(r.pod["spec"], r.allocated)),
                ),
                r.priority,
                r.guaranteed,
                r.pending_since,
            )
            for r in deferred.values()
        ]
        for item in rules.retry_order(pending):
            self._evaluate_resize(deferred[item.key], now)

    def _actuate(self, record: PodRecord, now: float) -> None:
        if same(record.allocated, record.actual):
            return
        if (record.namespace, record.name) in self.held or record.accepted_tick == self.ticks:
            return
        if now - record.accepted_at < self.config.actuation_delay:
            return
        changes = [
            rules.MemoryLimitChange(
                name,
                optional_memory((record.actual.get(name) or {}).get("limits")),
                optional_memory(record.allocated[name].get("limits")),
                record.runtimes[name].memory if name in record.runtimes else 0,
            )
            for name in record.allocated
            if name != POD_LEVEL
        ]
        error = rules.memory_limit_decrease_error(changes) or _pod_level_limit_error(record)
        if error:
            record.actuation_error = error
            return
        record.actual = copy.deepcopy(record.allocated)
        record.actuation_error = ""
        record.in_progress_generation = None
        self._retry_due = True

    # -- usage, OOM kills and evictions ---------------------------------------
    def _advance_usage(self, record: PodRecord, now: float) -> None:
        for name, runtime in record.runtimes.items():
            series = self.series_for(record.namespace, record.name, name)
            limits = (record.actual.get(name) or {}).get("limits") or {}
            shared = (record.actual.get(POD_LEVEL) or {}).get("limits") or {}
            limits = {**shared, **limits}  # no own limit: the pod-level one bounds it
            runtime.advance(now, series, optional_memory(limits), optional_cores(limits))

    def _relieve_memory_pressure(self, node: SimNode, now: float) -> None:
        pods = [r for r in self.records.values() if r.node == node.name and r.running]
        used = sum(rt.memory for r in pods for rt in r.runtimes.values())
        available = node.capacity.memory - used
        node.memory_pressure = available < self.config.eviction_threshold
        if not node.memory_pressure or not pods:
            return
        if now - node.last_eviction < self.config.eviction_interval:
            return
        by_uid = {r.uid: r for r in pods}
        candidates = [
            rules.EvictionCandidate(
                r.uid,
                r.priority,
                sum(rt.memory for rt in r.runtimes.values()),
                sum(
                    resources_of(a.get("requests")).memory
                    for name, a in r.allocated.items()
                    if name != POD_LEVEL
                ),
            )
            for r in pods
        ]
        victim = by_uid[rules.eviction_order(candidates)[0].key]
        containers = [
            (name, rt.memory, resources_of(victim.allocated[name].get("requests")).memory)
            for name, rt in victim.runtimes.items()
        ]
        victim.terminal_reason = "Evicted"
        victim.terminal_message = rules.eviction_message(
            self.config.eviction_threshold, available, containers
        )
        node.last_eviction = now
        self._retry_due = True

    # -- status -----------------------------------------------------------------


def _pod_level_limit_error(record: PodRecord) -> str | None:
    """The kubelet's refusal to set a pod-level memory limit (KEP-5419) at or below the
    pod's usage; it retries on later syncs."""
    desired = optional_memory((record.allocated.get(POD_LEVEL) or {}).get("limits"))
    current = optional_memory((record.actual.get(POD_LEVEL) or {}).get("limits"))
    usage = sum(runtime.memory for runtime in record.runtimes.values())
    if desired is None or (current is not None and desired >= current) or usage < desired:
        return None
    return (
        f"cannot decrease memory limits: attempting to set pod memory limit ({desired}) "
        f"below current usage ({usage})"
    )
