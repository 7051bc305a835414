"""Where a pod's last resize stands, read from its conditions (pure).

Kubernetes 1.33+ reports resizes with two pod conditions: `PodResizePending`
(reason Deferred or Infeasible) and `PodResizeInProgress` (reason Error when
actuation failed). A condition observed for an older generation is about a spec
the updater has since replaced, so it does not count; an unknown pending reason
is read as Deferred, as the KEP asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from tailor.schedule_file import aware_time
from updater.resources import Json


class ResizeState(StrEnum):
    NONE = "none"
    IN_PROGRESS = "in progress"
    DEFERRED = "Deferred"
    INFEASIBLE = "Infeasible"
    ERROR = "Error"


@dataclass(frozen=True)
class ResizeStatus:
    """The state, since when (the condition's transition time) and the kubelet's message."""

    state: ResizeState
    since: datetime | None = None
    message: str = ""


def _condition(pod: Json, kind: str) -> Json | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _current(condition: Json | None, generation: int | None) -> bool:
    if condition is None or condition.get("status", "True") != "True":
        return False
    observed = condition.get("observedGeneration")
    return observed is None or generation is None or int(observed) >= generation


def _since(condition: Json) -> datetime | None:
    stamp = condition.get("lastTransitionTime")
    if not isinstance(stamp, str):
        return None
    try:
        return aware_time(stamp)  # a time without a zone could not be compared with now
    except ValueError:
        return None


def resize_status(pod: Json) -> ResizeStatus:
    """The pod's resize state; a pending answer about the current spec comes first."""
    generation = (pod.get("metadata") or {}).get("generation")
    pending = _condition(pod, "PodResizePending")
    if _current(pending, generation):
        assert pending is not None
        reason = pending.get("reason")
        state = ResizeState.INFEASIBLE if reason == "Infeasible" else ResizeState.DEFERRED
        return ResizeStatus(state, _since(pending), str(pending.get("message", "")))
    progress = _condition(pod, "PodResizeInProgress")
    if _current(progress, generation):
        assert progress is not None
        state = ResizeState.ERROR if progress.get("reason") == "Error" else ResizeState.IN_PROGRESS
        return ResizeStatus(state, _since(progress), str(progress.get("message", "")))
    return ResizeStatus(ResizeState.NONE)
