"""What to do with one pod this pass: resize, wait, evict or leave it (pure).

In-place first: a resize that fits the node is sent. A pod the kubelet cannot
resize (Infeasible, an actuation Error, Deferred or in progress for too long, the
upstream updater's timeouts) is evicted only when the operator allows it and a
controller will replace it; the API server's eviction then also honours the
pod's PodDisruptionBudgets. A growth our node check finds no room for is judged
as the kubelet would judge it: one larger than the whole node at once, one that
only lacks room beside its neighbours after the Deferred timeout (a neighbour may
shrink or leave meanwhile), timed by `NoRoomClock` across passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from updater.fit import Fit
from updater.plan import ResizePlan, Skipped
from updater.resize_status import ResizeState, ResizeStatus


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


class NoRoomClock:
    """Since when each pod's planned growth has found no room on its node, across passes."""

    def __init__(self) -> None:
        self._since: dict[str, datetime] = {}
        self._short: set[str] = set()  # asked about this pass

    def since(self, uid: str, now: datetime) -> datetime:
        """When `uid` was first found without room, in the run of passes that ends now."""
        self._short.add(uid)
        return self._since.setdefault(uid, now)

    def end_pass(self) -> None:
        """Forget pods not short of room this pass: a later shortage starts a new wait."""
        self._since = {uid: at for uid, at in self._since.items() if uid in self._short}
        self._short = set()


@dataclass(frozen=True, slots=True)
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


def _no_room(
    fit: Fit, since: datetime | None, now: datetime, policy: Policy, has_controller: bool
) -> Decision:
    """A growth without room: Infeasible-like at once, Deferred-like after the timeout."""
    waited = now - since if since else timedelta(0)
    if fit.never or not (policy.evict and has_controller):
        return _evict_or_leave(fit.reason, policy, has_controller)
    if waited >= policy.deferred_timeout:
        return _evict_or_leave(f"{fit.reason} for {waited}", policy, has_controller)
    return Decision(Action.WAIT, f"{fit.reason}; waiting up to {policy.deferred_timeout} for room")


def decide(
    plan: ResizePlan | Skipped,
    status: ResizeStatus,
    fit: Fit | None,
    now: datetime,
    policy: Policy,
    has_controller: bool,
    no_room_since: datetime | None = None,
) -> Decision:
    """One pod's action; `fit` is the node check of `plan` (None when nothing changes) and
    `no_room_since` when the pod was first found without room (None: now)."""
    if isinstance(plan, Skipped):
        return Decision(Action.NONE, plan.reason)
    if plan.changes:
        if fit is None or fit.fits:
            return Decision(Action.RESIZE, plan.describe())
        return _no_room(fit, no_room_since, now, policy, has_controller)
    stuck = _stuck(status, now, policy)
    if stuck:
        return _evict_or_leave(stuck, policy, has_controller)
    if status.state is ResizeState.NONE:
        said = "; ".join(plan.notes)  # e.g. a sidecar's target it does not follow
        return Decision(
            Action.NONE, f"at its scheduled size; {said}" if said else "at its scheduled size"
        )
    return Decision(Action.WAIT, f"resize {status.state}")


def recreate_decision(reason: str, policy: Policy) -> Decision:
    """A `Recreate` pod off its recommendation is evicted (if allowed); its replacement gets
    the recommendation from the webhook."""
    if not policy.evict:
        return Decision(Action.NONE, f"{reason}; updateMode Recreate needs --evict")
    return Decision(Action.EVICT, f"{reason}; updateMode Recreate")
