"""What to do with one pod this pass: resize, wait, evict or leave it (pure).

In-place first: a resize that fits the node is sent. A pod the kubelet cannot
resize (Infeasible, an actuation Error, Deferred or in progress for too long, the
upstream updater's timeouts) is evicted only when the operator allows it and a
controller will replace it; the API server's eviction then also honours the
pod's PodDisruptionBudgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from updater.fit import Fit
from updater.plan import ResizePlan, Skipped
from updater.progress import ResizeState, ResizeStatus


class Action(StrEnum):
    RESIZE = "resize"
    EVICT = "evict"
    WAIT = "wait"
    NONE = "none"


@dataclass(frozen=True)
class Policy:
    """The operator's choices; the timeouts are the upstream in-place updater's."""

    evict: bool = False
    deferred_timeout: timedelta = timedelta(minutes=5)
    in_progress_timeout: timedelta = timedelta(hours=1)
    no_eviction_reason: str = "eviction not allowed (--evict)"


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str


def _evict_or_leave(reason: str, policy: Policy, has_controller: bool) -> Decision:
    if not policy.evict:
        return Decision(Action.NONE, f"{reason}; {policy.no_eviction_reason}")
    if not has_controller:
        return Decision(Action.NONE, f"{reason}; not evicted: no controller would replace it")
    return Decision(Action.EVICT, reason)


def _stuck(status: ResizeStatus, now: datetime, policy: Policy) -> str | None:
    """Why the last resize will not complete in place, or None while it still may."""
    age = now - status.since if status.since else timedelta(0)
    if status.state in (ResizeState.INFEASIBLE, ResizeState.ERROR):
        return f"resize {status.state}: {status.message}".rstrip(": ")
    if status.state is ResizeState.DEFERRED and age >= policy.deferred_timeout:
        return f"resize Deferred for {age}: {status.message}".rstrip(": ")
    if status.state is ResizeState.IN_PROGRESS and age >= policy.in_progress_timeout:
        return f"resize in progress for {age}"
    return None


def decide(
    plan: ResizePlan | Skipped,
    status: ResizeStatus,
    fit: Fit | None,
    now: datetime,
    policy: Policy,
    has_controller: bool,
) -> Decision:
    """One pod's action; `fit` is the node check of `plan` (None when nothing changes)."""
    if isinstance(plan, Skipped):
        return Decision(Action.NONE, plan.reason)
    if plan.changes:
        if fit is None or fit.fits:
            return Decision(Action.RESIZE, plan.describe())
        return _evict_or_leave(fit.reason, policy, has_controller)
    stuck = _stuck(status, now, policy)
    if stuck:
        return _evict_or_leave(stuck, policy, has_controller)
    if status.state is ResizeState.NONE:
        said = "; ".join(plan.notes)  # e.g. a sidecar's target it does not follow
        return Decision(
            Action.NONE, f"at its scheduled size; {said}" if said else "at its scheduled size"
        )
    return Decision(Action.WAIT, f"resize {status.state}")
