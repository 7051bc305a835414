"""What the updater should apply now: the period of the schedule in force for each container."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from tailor.schedule_file import ContainerKey, ScheduleRow


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
