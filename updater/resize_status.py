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


@dataclass(frozen=True, slots=True)
class ResizeStatus:
    """The state, since when (the condition's transition time) and the kubelet's message."""

    state: ResizeState
    since: datetime | None = None
    message: str = ""


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


NO_RESIZE = ResizeStatus(ResizeState.NONE)


def _conditions(pod: Json) -> tuple[Json | None, Json | None]:
    """The pod's first PodResizePending and PodResizeInProgress conditions, in one scan."""
    pending = progress = None
    for condition in (pod.get("status") or {}).get("conditions") or ():
        kind = condition.get("type")
        if kind == "PodResizePending" and pending is None:
            pending = condition
        elif kind == "PodResizeInProgress" and progress is None:
            progress = condition
    return pending, progress


def resize_status(pod: Json) -> ResizeStatus:
    """The pod's resize state; a pending answer about the current spec comes first."""
    pending, progress = _conditions(pod)
    if pending is None and progress is None:
        return NO_RESIZE
    generation = (pod.get("metadata") or {}).get("generation")
    if _current(pending, generation):
        assert pending is not None
        reason = pending.get("reason")
        state = ResizeState.INFEASIBLE if reason == "Infeasible" else ResizeState.DEFERRED
        return ResizeStatus(state, _since(pending), str(pending.get("message", "")))
    if _current(progress, generation):
        assert progress is not None
        state = ResizeState.ERROR if progress.get("reason") == "Error" else ResizeState.IN_PROGRESS
        return ResizeStatus(state, _since(progress), str(progress.get("message", "")))
    return NO_RESIZE
