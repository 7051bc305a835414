"""Ending a CPU startup boost (upstream's AEP-7862) in place (pure).

The webhook boosts a container's CPU at creation and records (`tailor.startup_boost`) the
boosted and the unboosted CPU and how long
the boost stays once the pod is Ready. While a container still runs with its boosted
request, the pod is boosted: nothing else resizes it until it has been Ready for that
long; then it goes back in place to the CPU it was admitted with (or the schedule's,
when one is in force), and it is never evicted for it, since an evicted pod would come
back boosted (upstream's rule against an unboost-evict loop).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from tailor.pods import sized_containers
from tailor.schedule_file import aware_time
from tailor.startup_boost import BoostRecord
from updater.due_targets import Target
from updater.resources import Json, requests_of


@dataclass(frozen=True)
class StartupBoost:
    """A pod's boost as the webhook recorded it: per container the boosted and the
    unboosted CPU request (millicores), and the hold after Ready."""

    hold: timedelta
    boosted: Mapping[str, int]
    base: Mapping[str, int]

    def still_boosted(self, pod: Json) -> list[str]:
        """The containers that still run with their boosted request (spec)."""
        names = []
        for container in (c.spec for c in sized_containers(pod)):
            name = str(container.get("name"))
            if name in self.boosted and requests_of(container).get("cpu") == self.boosted[name]:
                names.append(name)
        return names

    def waiting(self, pod: Json, now: datetime) -> str | None:
        """Why the boost stays this pass (None: it is over)."""
        ready = _ready_since(pod)
        if ready is None:
            return "startup CPU boost until the pod is Ready"
        until = ready + self.hold
        if now < until:
            return f"startup CPU boost until {until.isoformat()} (Ready + {self.hold})"
        return None

    def targets(self, pod: Json, scheduled: Mapping[str, Target] | None) -> dict[str, Target]:
        """CPU back where it was admitted (or the schedule's); memory as the schedule says."""
        targets: dict[str, Target] = {}
        for name in self.still_boosted(pod):
            planned = (scheduled or {}).get(name)
            cpu = planned.cpu_cores if planned is not None else None
            cores = cpu if cpu is not None else self.base[name] / 1000.0
            memory = (planned.memory_bytes, planned.memory_limit_bytes) if planned else (None, None)
            targets[name] = Target(cores, *memory)
        return targets


def startup_boost(pod: Json) -> StartupBoost | None:
    """The pod's boost, if its annotation is readable and a container still runs boosted."""
    record = BoostRecord.from_annotations((pod.get("metadata") or {}).get("annotations"))
    if record is None:
        return None
    boost = StartupBoost(
        timedelta(seconds=record.hold_seconds),
        {name: cpu.request.milli_value() for name, cpu in record.containers.items()},
        {name: cpu.base_request.milli_value() for name, cpu in record.containers.items()},
    )
    return boost if boost.still_boosted(pod) else None


def _ready_since(pod: Json) -> datetime | None:
    """When the pod last became Ready (None: it is not Ready)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            try:
                return aware_time(str(condition.get("lastTransitionTime")))
            except ValueError:
                return None
    return None
