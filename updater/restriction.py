"""How many replicas of one controller the updater may evict at once (pure).

Upstream's updater rule, so `--evict` disrupts no more than upstream would: pods are
grouped by the controller that owns them; a group with fewer live pods than
`--min-replicas` (2, or its VPA's `updatePolicy.minReplicas`) is never evicted from,
and in one pass at most `int(replicas x --eviction-tolerance)` (0.5) of a group go,
or one when that rounds to none and every replica runs. PodDisruptionBudgets still
apply on top, through the Eviction API.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from tailor.api.vpa import EvictionChangeRequirement, EvictionRequirement
from tailor.pods import container_statuses, sized_containers
from updater.due_targets import Target
from updater.resources import Json, requests_of, resource_list

Owner = tuple[str, str, str]  # (namespace, kind, name) of the controlling owner


@dataclass(frozen=True)
class DisruptionLimits:
    """Upstream's updater defaults: --min-replicas 2, --eviction-tolerance 0.5."""

    min_replicas: int = 2
    tolerance: float = 0.5

    def __post_init__(self) -> None:
        if self.min_replicas < 1:
            raise ValueError("--min-replicas must be at least 1")
        if not 0.0 <= self.tolerance <= 1.0:
            raise ValueError("--eviction-tolerance must lie in [0, 1]")


def owner_of(pod: Json) -> Owner | None:
    """The pod's controlling owner, or None for a bare pod."""
    metadata = pod.get("metadata") or {}
    for reference in metadata.get("ownerReferences") or []:
        if reference.get("controller"):
            return (str(metadata.get("namespace")), str(reference["kind"]), str(reference["name"]))
    return None


def _alive(pod: Json) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Running", "Pending") and not (pod.get("metadata") or {}).get(
        "deletionTimestamp"
    )


# the groups whose configured size upstream's restriction reads, and where it is kept
GROUP_KINDS = ["ReplicaSet", "StatefulSet", "ReplicationController", "DaemonSet"]
_SIZE_FIELD = {"DaemonSet": ("status", "numberReady")}  # the others: spec.replicas


def configured_replicas(
    controllers: Mapping[str, Mapping[tuple[str, str], Json]],
) -> dict[Owner, int]:
    """Each group's configured size, by kind (`GROUP_KINDS`): spec.replicas, a DaemonSet's
    ready pods, as upstream reads them. Other owners (a Job) count their live pods."""
    configured = {}
    for kind in GROUP_KINDS:
        section, name_of_field = _SIZE_FIELD.get(kind, ("spec", "replicas"))
        for (namespace, name), group in (controllers.get(kind) or {}).items():
            replicas = (group.get(section) or {}).get(name_of_field)
            if isinstance(replicas, int) and not isinstance(replicas, bool):
                configured[(namespace, kind, name)] = replicas
    return configured


class EvictionRestriction:
    """The groups of one pass; `refusal` says why a pod may not go, `record` counts one that did."""

    def __init__(
        self, pods: Iterable[Json], configured: Mapping[Owner, int], limits: DisruptionLimits
    ) -> None:
        self.limits, self.configured = limits, configured
        self._pods = list(pods)  # grouped at the first eviction asked about: most passes have none
        self.evicted: Counter[Owner] = Counter()

    @cached_property
    def _groups(self) -> list[tuple[Owner | None, Json]]:
        return [(owner_of(p), p) for p in self._pods if _alive(p)]

    @cached_property
    def live(self) -> Counter[Owner]:
        """Each group's live pods (Running or Pending, not being deleted)."""
        return Counter(owner for owner, _ in self._groups if owner is not None)

    @cached_property
    def running(self) -> Counter[Owner]:
        """Each group's Running pods."""
        return Counter(
            owner
            for owner, pod in self._groups
            if owner is not None and (pod.get("status") or {}).get("phase") == "Running"
        )

    def refusal(self, pod: Json, min_replicas: int | None = None) -> str | None:
        """Why evicting `pod` now would disrupt its group too much; None when it may go."""
        owner = owner_of(pod)
        if owner is None:
            return "no controller would replace it"
        _, kind, name = owner
        required = min_replicas or self.limits.min_replicas
        live = self.live[owner]
        if live < required:
            return f"{kind} {name} has {live} live replica(s), fewer than min replicas {required}"
        configured = self.configured.get(owner, live)
        tolerance = int(configured * self.limits.tolerance)
        running, evicted = self.running[owner], self.evicted[owner]
        if running - evicted > configured - tolerance:
            return None
        if running == configured and tolerance == 0 and evicted == 0:
            return None  # a small group may still lose one replica at a time
        return (
            f"{kind} {name}: {evicted} of {configured} replicas already evicted this pass "
            f"(eviction tolerance {self.limits.tolerance:g})"
            if evicted
            else f"{kind} {name} has {running} of {configured} replicas running"
        )

    def record(self, pod: Json) -> None:
        owner = owner_of(pod)
        if owner is not None:
            self.evicted[owner] += 1


def _running_requests(container: Json, status: Json | None) -> dict[str, int]:
    """What the container runs with now: the kubelet's report, else its spec (a resize the
    kubelet refused has already changed the spec, not the container)."""
    if status:
        for found in (
            (status.get("resources") or {}).get("requests"),
            status.get("allocatedResources"),
        ):
            if found:
                return resource_list(found)
    return requests_of(container)


def _target_amount(target: Target, resource: str) -> int:
    if resource == "cpu":
        return round((target.cpu_cores or 0.0) * 1000)
    return round(target.memory_bytes or 0.0)


def unmet_eviction_requirements(
    pod: Json, targets: Mapping[str, Target], requirements: Sequence[EvictionRequirement]
) -> str | None:
    """Upstream's `updatePolicy.evictionRequirements`: a pod may be evicted only when one of
    its containers moves every listed resource the required way (target above, or below,
    what it runs with); None when it may go."""
    if not requirements:
        return None
    statuses = container_statuses(pod)
    for container in (c.spec for c in sized_containers(pod)):
        name = str(container.get("name"))
        target = targets.get(name)
        if target is None:
            continue
        running = _running_requests(container, statuses.get(name))
        if all(
            _moves(item.change_requirement, _target_amount(target, r), running.get(r, 0))
            for item in requirements
            for r in item.resources
        ):
            return None
    wanted = "; ".join(f"{', '.join(i.resources)} {i.change_requirement}" for i in requirements)
    return f"its VPA's evictionRequirements are not met ({wanted})"


def _moves(requirement: EvictionChangeRequirement, target: int, running: int) -> bool:
    if requirement is EvictionChangeRequirement.TARGET_HIGHER_THAN_REQUESTS:
        return target > running
    return target < running


class WebhookStatus:
    """Whether evictions may go ahead, asked once a pass and only if one is due: an evicted
    pod comes back with its template's requests unless the webhook sizes the replacement."""

    def __init__(self, check: Callable[[datetime], str | None] | None) -> None:
        self.check = check
        self.answer: tuple[str | None] | None = None

    def refusal(self, now: datetime) -> str | None:
        if self.check is None:
            return None
        if self.answer is None:
            self.answer = (self.check(now),)
        down = self.answer[0]
        if down is None:
            return None
        return (
            f"{down}: the replacement would come back unsized "
            "(--no-use-admission-controller-status evicts anyway)"
        )
