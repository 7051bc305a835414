"""What the updater should apply now: the period of the schedule in force for each container."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tailor.api.meta import object_key
from tailor.schedule_file import ContainerKey, ScheduleRow
from tailor.workloads import pod_workload
from updater.resources import Json

if TYPE_CHECKING:  # updater.unboost reads Target from here
    from updater.unboost import StartupBoost


@dataclass(frozen=True)
class Target:
    """Requests (and memory limit) one container should have now; None leaves it as is."""

    cpu_cores: float | None
    memory_bytes: float | None
    memory_limit_bytes: float | None


def due_targets(rows: Iterable[ScheduleRow], now: datetime) -> Mapping[ContainerKey, Target]:
    """The period in force at `now` for every container that has one ([start, end))."""
    due: dict[ContainerKey, Target] = {}
    for row in rows:
        if row.start <= now < row.end:
            due[(row.namespace, row.workload, row.container)] = Target(
                row.cpu, row.memory, row.memory_limit
            )
    return due


def without_contested(
    targets: Mapping[str, Target], contested: Callable[[str], frozenset[str]]
) -> dict[str, Target]:
    """The targets minus the resources an HPA scales on (`contested(container)`), which stay
    as they are; a container left nothing to change is dropped."""
    kept = {}
    for name, target in targets.items():
        taken = contested(name)
        memory = None if "memory" in taken else target.memory_bytes
        cpu = None if "cpu" in taken else target.cpu_cores
        if cpu is not None or memory is not None:
            limit = None if "memory" in taken else target.memory_limit_bytes
            kept[name] = Target(cpu, memory, limit)
    return kept


def _targets_by_workload(
    rows: Iterable[ScheduleRow], now: datetime
) -> Mapping[tuple[str, str], dict[str, Target]]:
    grouped: dict[tuple[str, str], dict[str, Target]] = defaultdict(dict)
    for (namespace, workload, container), target in due_targets(rows, now).items():
        grouped[(namespace, workload)][container] = target
    return grouped


def live(pod: Json) -> bool:
    metadata, status = pod.get("metadata") or {}, pod.get("status") or {}
    return status.get("phase") == "Running" and not metadata.get("deletionTimestamp")


def scheduled(
    pods: Iterable[Json],
    rows: Iterable[ScheduleRow],
    now: datetime,
    acts_in: Callable[[str], bool],
) -> Iterator[tuple[Json, str, str, Mapping[str, Target]]]:
    """Each running pod whose workload has a period in force now: (pod, namespace, workload,
    targets per container)."""
    wanted = _targets_by_workload(rows, now)
    for pod in pods:
        namespace = object_key(pod)[0]
        workload = pod_workload(pod)
        targets = wanted.get((namespace, workload))
        if targets and live(pod) and acts_in(namespace):
            yield pod, namespace, workload, targets


def boosted_elsewhere(
    pods: Iterable[Json],
    due: list[tuple[Json, str, str, Any]],
    boosted: Mapping[int, StartupBoost],
    acts_in: Callable[[str], bool],
) -> list[tuple[Json, str, str, None]]:
    """Boosted pods nothing else plans for this pass (no schedule row): their boost ends too."""
    listed = {id(pod) for pod, *_ in due}
    return [
        (pod, namespace, pod_workload(pod), None)
        for pod in pods
        if id(pod) in boosted
        and id(pod) not in listed
        and live(pod)
        and acts_in(namespace := object_key(pod)[0])
    ]


def recommended(
    pods: Iterable[Json], acts_in: Callable[[str], bool]
) -> Iterator[tuple[Json, str, str, None]]:
    """Every running pod (its VPA, if any, says what it should have)."""
    for pod in pods:
        namespace = object_key(pod)[0]
        if live(pod) and acts_in(namespace):
            yield pod, namespace, pod_workload(pod), None


def why_nothing(
    pods: Iterable[Json],
    rows: Iterable[ScheduleRow],
    now: datetime,
    acts_in: Callable[[str], bool],
) -> str:
    """Why a pass following `rows` considered no pod: what an empty report says."""
    listed = list(rows)
    if not listed:
        return "the schedule has no rows"
    wanted = _targets_by_workload(listed, now)
    if not wanted:
        first, last = min(r.start for r in listed), max(r.end for r in listed)
        return (
            f"no period of the schedule is in force at {now:%Y-%m-%d %H:%M:%S} UTC "
            f"(it covers {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC)"
        )
    scoped = sorted(f"{ns}/{workload}" for ns, workload in wanted if acts_in(ns))
    if not scoped:
        return f"the {len(wanted)} scheduled workload(s) are outside the namespaces served"
    shown = ", ".join(scoped[:5]) + (f" and {len(scoped) - 5} more" if len(scoped) > 5 else "")
    running = [pod for pod in pods if live(pod)]
    return f"no running pod of the workloads scheduled now ({shown}); {len(running)} running"
