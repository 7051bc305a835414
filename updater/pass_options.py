"""What a pass of the in-place updater (`updater.follow`) is given and answers.

`PassOptions` say how a pass acts; an `Outcome` is what became of one pod, and
`Outcomes` a whole pass's, with why there were none and the HPAs it coordinated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from tailor.events import NoEvents, Recorder
from tailor.scope import NamespaceScope
from updater import pressure
from updater.decide import Action, NoRoomClock, Policy
from updater.hpa_sync import HpaSync
from updater.rate import EvictionRate
from updater.recommendations import UpdateRules
from updater.restriction import DisruptionLimits


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one pod; `applied` is False when the API refused the write."""

    namespace: str
    pod: str
    workload: str
    action: Action
    detail: str
    applied: bool = True
    event: str = ""  # the Event reason recorded on the pod (updater.report), "" for none


class Outcomes(list[Outcome]):
    """A pass's outcomes, one per pod considered; `why_nothing` says why there are none;
    `hpas`: the HPA targets rewritten for VPAs that coordinate (`updater.hpa_sync`)."""

    why_nothing: str = ""
    hpas: tuple[HpaSync, ...] = ()


@dataclass(frozen=True)
class PassOptions:
    """How a pass acts: the eviction policy, which namespaces, and whether writes are dry runs."""

    policy: Policy = field(default_factory=Policy)
    namespaces: frozenset[str] | None = None
    limits: DisruptionLimits = field(default_factory=DisruptionLimits)
    dry_run: bool = False
    use_vpa: bool = False
    recommendations: bool = False  # each pod's VPA recommendation instead of a schedule
    scope: NamespaceScope = field(default_factory=NamespaceScope)
    allow_hpa_conflicts: bool = False  # resize even what an HPA scales on (--allow-hpa-conflicts)
    # why the webhook may be down (None: up), asked before the first eviction of a pass;
    # None: not asked (--no-use-admission-controller-status)
    webhook_down: Callable[[datetime], str | None] | None = None
    update_rules: UpdateRules = field(default_factory=UpdateRules)  # upstream's thresholds
    eviction_rate: EvictionRate = field(default_factory=lambda: EvictionRate(0))  # shared by passes
    no_room: NoRoomClock = field(default_factory=NoRoomClock)  # shared by passes
    changes_per_day: int | None = None  # resizes a pod may take in any 24 h (None: no cap)
    events: Recorder = field(default_factory=NoEvents)  # Kubernetes Events of each outcome
    overwrite_others: bool = (
        False  # resize over another actor's resize (--overwrite-others-resizes)
    )
    memory_pressure: pressure.MemoryPressure | None = None  # raise memory under pressure (PSI)

    def acts_in(self, namespace: str) -> bool:
        """In `-n`'s namespaces (all without it) and within the scope flags."""
        named = self.namespaces is None or namespace in self.namespaces
        return named and self.scope.includes(namespace)
