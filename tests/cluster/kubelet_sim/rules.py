"""The kubelet's decisions, as pure functions over plain numbers.

Kept apart from the API loop so they can be unit-tested against the rules
and message formats of the kubelet (Kubernetes 1.33-1.36, KEP-1287):

- pod requests: app containers + sidecars vs. init containers, + overhead;
- resize admission: Infeasible (static CPU / memory manager with a Guaranteed
  pod; desired requests above the node's allocatable, the kubelet rule up to
  1.35, which a 1.36 API server pre-empts with a 403), Deferred (does not fit
  beside the other pods' allocated requests), or accepted;
- the retry order of Deferred resizes;
- the actuation check for memory-limit decreases below current usage;
- admission of new pods and the eviction ranking under memory pressure.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tests.cluster.kubelet_sim.quantities import Resources, format_memory

INFEASIBLE = "Infeasible"
NO_RESOURCES = Resources()
DEFERRED = "Deferred"


@dataclass(frozen=True)
class InitContainer:
    """An init container's requests; restartable ones are sidecars."""

    requests: Resources
    restartable: bool = False


@dataclass(frozen=True)
class PodShape:
    """What a pod asks of its node: requests per container, init containers in order, overhead."""

    containers: tuple[Resources, ...]
    init_containers: tuple[InitContainer, ...] = ()
    overhead: Resources = NO_RESOURCES
    pod_cpu: int | None = None  # pod-level requests (spec.resources, KEP-2837), when set
    pod_memory: int | None = None


def pod_requests(shape: PodShape) -> Resources:
    """Total pod requests as the scheduler and kubelet compute them.

    max(sum(app containers) + sum(sidecars), the largest init-container step
    (each plain init container runs beside the sidecars started before it))
    + overhead. A resource the pod requests at pod level counts at that request instead
    (+ overhead): the containers share it.
    """
    app = sum(shape.containers, Resources())
    sidecars = Resources()
    init_peak = Resources()
    for init in shape.init_containers:
        if init.restartable:
            sidecars = sidecars + init.requests
            init_peak = init_peak.maximum(sidecars)
        else:
            init_peak = init_peak.maximum(sidecars + init.requests)
    containers = (app + sidecars).maximum(init_peak)
    pod = Resources(
        containers.cpu if shape.pod_cpu is None else shape.pod_cpu,
        containers.memory if shape.pod_memory is None else shape.pod_memory,
    )
    return pod + shape.overhead


@dataclass(frozen=True)
class NodeLimits:
    """What the kubelet knows about its node for admission."""

    allocatable: Resources
    max_pods: int = 110
    cpu_manager_static: bool = False
    memory_manager_static: bool = False


class Outcome(enum.Enum):
    ACCEPTED = "Accepted"
    DEFERRED = DEFERRED
    INFEASIBLE = INFEASIBLE


@dataclass(frozen=True)
class Decision:
    """A resize (or admission) answer with the kubelet's reason message."""

    outcome: Outcome
    message: str = ""
    reason: str = ""


def _insufficient(resource: str, requested: int, used: int, capacity: int) -> str:
    return (
        f"Node didn't have enough resource: {resource}, requested: {requested}, "
        f"used: {used}, capacity: {capacity}"
    )


def fit_failure(
    requests: Resources, others: Sequence[Resources], node: NodeLimits
) -> tuple[str, str] | None:
    """(reason, message) when `requests` do not fit beside `others`, else None.

    The scheduler's fit check the kubelet runs on admission: pod count first,
    then CPU, then memory; only the first failure is reported.
    """
    if len(others) + 1 > node.max_pods:
        return "OutOfpods", _insufficient("pods", 1, len(others), node.max_pods)
    if requests.cpu == 0 and requests.memory == 0:
        return None
    used = sum(others, Resources())
    if requests.cpu > 0 and requests.cpu > node.allocatable.cpu - used.cpu:
        return "OutOfcpu", _insufficient("cpu", requests.cpu, used.cpu, node.allocatable.cpu)
    if requests.memory > 0 and requests.memory > node.allocatable.memory - used.memory:
        message = _insufficient("memory", requests.memory, used.memory, node.allocatable.memory)
        return "OutOfmemory", message
    return None


def decide_resize(
    desired: PodShape,
    others: Sequence[Resources],
    node: NodeLimits,
    *,
    guaranteed: bool = False,
    cpu_changes: bool = True,
    memory_changes: bool = True,
) -> Decision:
    """Answer a resize to `desired` given the other active pods' allocated requests.

    `others` holds, per other active pod on the node, max(allocated, actuated)
    requests. cpu_changes / memory_changes say which requests the resize changes
    (for the static-manager rules).
    """
    if guaranteed and node.cpu_manager_static and cpu_changes:
        message = 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'
        return Decision(Outcome.INFEASIBLE, message, INFEASIBLE)
    if guaranteed and node.memory_manager_static and memory_changes:
        message = (
            'Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"'
        )
        return Decision(Outcome.INFEASIBLE, message, INFEASIBLE)
    requests = pod_requests(desired)
    allocatable = node.allocatable
    if requests.memory > allocatable.memory:
        message = (
            "Node didn't have enough capacity: memory, requested: "
            f"{requests.memory}, capacity: {allocatable.memory}"
        )
        return Decision(Outcome.INFEASIBLE, message, INFEASIBLE)
    if requests.cpu > allocatable.cpu:
        message = (
            f"Node didn't have enough capacity: cpu, requested: {requests.cpu}, "
            f"capacity: {allocatable.cpu}"
        )
        return Decision(Outcome.INFEASIBLE, message, INFEASIBLE)
    failure = fit_failure(requests, others, node)
    if failure is not None:
        return Decision(Outcome.DEFERRED, failure[1], DEFERRED)
    return Decision(Outcome.ACCEPTED)


def admit_new_pod(requests: Resources, others: Sequence[Resources], node: NodeLimits) -> Decision:
    """Admission of a pod newly bound to the node; rejected pods end Failed with this reason."""
    failure = fit_failure(requests, others, node)
    if failure is None:
        return Decision(Outcome.ACCEPTED)
    reason, message = failure
    return Decision(Outcome.DEFERRED, f"Pod was rejected: {message}", reason)


def is_increasing(desired: Resources, allocated: Resources) -> bool:
    """True when a resize grows the pod's total CPU or memory requests."""
    return desired.cpu > allocated.cpu or desired.memory > allocated.memory


@dataclass(frozen=True)
class PendingResize:
    """A Deferred resize waiting for room; `pending_since` is its condition's transition time."""

    key: str
    increasing: bool
    priority: int = 0
    guaranteed: bool = False
    pending_since: float | None = None


def retry_order(pending: Iterable[PendingResize]) -> list[PendingResize]:
    """The kubelet's retry order: non-growing first, then higher priority, then
    Guaranteed before others, then longest pending (unknown times last)."""
    return sorted(
        pending,
        key=lambda p: (
            p.increasing,
            -p.priority,
            not p.guaranteed,
            p.pending_since if p.pending_since is not None else math.inf,
        ),
    )


@dataclass(frozen=True)
class MemoryLimitChange:
    """One container's memory limit before / after a resize and its current usage."""

    container: str
    current_limit: int | None
    desired_limit: int | None
    usage: int


def memory_limit_decrease_error(changes: Sequence[MemoryLimitChange]) -> str | None:
    """The kubelet's actuation error when a memory limit would drop to or below usage.

    Checks the pod-level limit (only when every container has a memory limit)
    and each decreasing container limit. The container message carries the
    pod's usage, as the kubelet's does.
    """
    pod_usage = sum(change.usage for change in changes)
    errors: list[str] = []
    if changes and all(c.desired_limit is not None for c in changes):
        desired_pod = sum(c.desired_limit or 0 for c in changes)
        current_known = all(c.current_limit is not None for c in changes)
        current_pod = sum(c.current_limit or 0 for c in changes) if current_known else None
        if (current_pod is None or desired_pod < current_pod) and pod_usage >= desired_pod:
            errors.append(
                f"attempting to set pod memory limit ({desired_pod}) below current usage "
                f"({pod_usage})"
            )
    for change in changes:
        if change.desired_limit is None:
            continue
        decreasing = change.current_limit is None or change.desired_limit < change.current_limit
        if decreasing and change.usage >= change.desired_limit:
            errors.append(
                f'attempting to set container "{change.container}" memory limit '
                f"({change.desired_limit}) below current usage ({pod_usage})"
            )
    if not errors:
        return None
    joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f"cannot decrease memory limits: {joined}"


@dataclass(frozen=True)
class EvictionCandidate:
    """A running pod on a node under memory pressure."""

    key: str
    priority: int
    memory_usage: int
    memory_request: int


def eviction_order(candidates: Iterable[EvictionCandidate]) -> list[EvictionCandidate]:
    """The kubelet's memory-pressure ranking: pods above their requests first, then
    lower priority, then the largest usage above request."""
    return sorted(
        candidates,
        key=lambda c: (
            c.memory_usage <= c.memory_request,
            c.priority,
            -(c.memory_usage - c.memory_request),
        ),
    )


def eviction_message(
    threshold: int, available: int, containers: Sequence[tuple[str, int, int]]
) -> str:
    """The kubelet's eviction message; `containers` holds (name, usage, request) bytes."""
    message = (
        "The node was low on resource: memory. "
        f"Threshold quantity: {format_memory(threshold)}, available: {format_memory(available)}. "
    )
    for name, usage, request in containers:
        if usage > request:
            message += (
                f"Container {name} was using {format_memory(usage)}, request is "
                f"{format_memory(request)}, has larger consumption of memory. "
            )
    return message
