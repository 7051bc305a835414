"""What the updater should apply now: the period of the schedule in force for each container."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
