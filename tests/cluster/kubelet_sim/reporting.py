"""What the simulated kubelet reports: pod statuses and per-container metrics samples."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from tests.cluster.kubelet_sim import podstatus as ps
from tests.cluster.kubelet_sim.metrics import ContainerSample
from tests.cluster.kubelet_sim.records import (
    POD_LEVEL,
    Json,
    PodRecord,
    container_requirements,
    optional_resources,
    resizable,
)


def pod_status(record: PodRecord, now: float) -> Json:
    """The status the kubelet would post for `record` now."""
    status = copy.deepcopy(record.pod.get("status") or {})
    if not record.running:
        ps.mark_failed(status, reason=record.terminal_reason, message=record.terminal_message)
        if record.terminal_reason == "Evicted":
            ps.set_condition(
                status,
                "DisruptionTarget",
                now=now,
                reason="TerminationByKubelet",
                message=record.terminal_message,
                observed_generation=record.generation,
            )
        return status
    spec = record.pod["spec"]
    ps.mark_running(status, now=now, host_ip="127.0.0.1", pod_ip=record.pod_ip)
    status["observedGeneration"] = record.generation

    def running(container: Json) -> Json:
        name = container["name"]
        return ps.container_status(
            container,
            pod_uid=record.uid,
            runtime=record.runtimes[name],
            actual=record.actual.get(name, {}),
            allocated=record.allocated.get(name, {}),
        )

    status["containerStatuses"] = [running(c) for c in spec.get("containers", [])]
    inits = spec.get("initContainers") or []
    if inits:
        started = record.runtimes[spec["containers"][0]["name"]].started_at
        status["initContainerStatuses"] = [
            running(c)
            if c.get("restartPolicy") == "Always"
            else ps.completed_init_status(c, pod_uid=record.uid, started=started)
            for c in inits
        ]
    pod_level = record.allocated.get(POD_LEVEL)
    if pod_level:  # KEP-5419: the pod-level stanza allocated and applied
        if pod_level.get("requests"):
            status["allocatedResources"] = pod_level["requests"]
        status["resources"] = ps.resource_requirements(record.actual.get(POD_LEVEL))
    if record.pending_reason:
        ps.set_condition(
            status,
            ps.RESIZE_PENDING,
            now=record.pending_since or now,
            reason=record.pending_reason,
            message=record.pending_message,
            observed_generation=record.evaluated_generation,
        )
    else:
        ps.remove_condition(status, ps.RESIZE_PENDING)
    if record.in_progress_generation is not None:
        ps.set_condition(
            status,
            ps.RESIZE_IN_PROGRESS,
            now=record.accepted_at,
            reason="Error" if record.actuation_error else "",
            message=record.actuation_error,
            observed_generation=record.in_progress_generation,
        )
    else:
        ps.remove_condition(status, ps.RESIZE_IN_PROGRESS)
    return status


def container_samples(records: Iterable[PodRecord]) -> list[ContainerSample]:
    """Current numbers of every running container, and of evicted pods' containers
    (kube-state-metrics keeps showing a Failed pod until it is deleted)."""
    out = []
    for record in records:
        evicted = record.terminal_reason == "Evicted"
        if not (record.running or evicted):
            continue
        owners = record.pod["metadata"].get("ownerReferences") or []
        owner = next((o for o in owners if o.get("controller")), None)
        specs = {c["name"]: c for c in resizable(record.pod["spec"])}
        inits = {c["name"] for c in record.pod["spec"].get("initContainers") or []}
        for name, runtime in record.runtimes.items():
            declared = container_requirements(specs[name]) if name in specs else {}
            termination = runtime.last_termination
            out.append(
                ContainerSample(
                    namespace=record.namespace,
                    pod=record.name,
                    uid=record.uid,
                    container=name,
                    node=record.node,
                    cpu_seconds=runtime.cpu_seconds,
                    throttled_seconds=runtime.throttled_seconds,
                    memory_waiting_seconds=runtime.memory_waiting_seconds,
                    memory_stalled_seconds=runtime.memory_stalled_seconds,
                    memory_bytes=runtime.memory,
                    requests=optional_resources(declared.get("requests")),
                    limits=optional_resources(declared.get("limits")),
                    restart_count=runtime.restart_count,
                    last_terminated_reason=termination.reason if termination else None,
                    image=specs.get(name, {}).get("image", "registry.k8s.io/pause:3.10"),
                    container_id=ps.fake_id(record.uid, name, str(runtime.restart_count)),
                    owner_kind=owner["kind"] if owner else "",
                    owner_name=owner["name"] if owner else "",
                    evicted=evicted,
                    init=name in inits,  # a sidecar: kube-state-metrics' init_ names
                )
            )
    return out


def prune(value: Any) -> Any:
    """Drop empty values so our status and the server's compare equal when they mean the same."""
    if isinstance(value, dict):
        pruned = {k: prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value
