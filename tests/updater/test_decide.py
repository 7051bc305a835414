"""One pod's action: resize in place, wait for the kubelet, evict (opt-in), or leave it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tailor.api.meta import ResourceList
from updater.decide import Action, Decision, NoRoomClock, Policy, decide
from updater.fit import Fit
from updater.plan import ContainerResize, ResizePlan, Skipped
from updater.resize_status import ResizeState, ResizeStatus

NOW = datetime(2024, 5, 14, 12, 0, tzinfo=UTC)
GROW = ResizePlan(
    (ContainerResize("app", ResourceList(cpu="1500m", memory="1Gi"), ResourceList(cpu="3")),)
)
AT_TARGET = ResizePlan(())
EVICT = Policy(evict=True)
NO_ROOM = Fit(False, "does not fit node node-a: cpu needs 1500, 1000 free")
INFEASIBLE_MESSAGE = "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000"


def status(state: ResizeState, age: timedelta | None = None, message: str = "") -> ResizeStatus:
    return ResizeStatus(state, None if age is None else NOW - age, message)


NONE = status(ResizeState.NONE)


def test_policy_defaults_are_the_upstream_updaters() -> None:
    assert Policy() == Policy(False, timedelta(minutes=5), timedelta(hours=1))


@pytest.mark.parametrize("policy", [Policy(), EVICT])
@pytest.mark.parametrize(
    "state", [NONE, status(ResizeState.INFEASIBLE), status(ResizeState.ERROR, timedelta(days=1))]
)
def test_a_skipped_plan_leaves_the_pod_whatever_its_state(
    policy: Policy, state: ResizeStatus
) -> None:
    skipped = Skipped("BestEffort pod: no requests to resize")
    assert decide(skipped, state, None, NOW, policy, True) == Decision(
        Action.NONE, "BestEffort pod: no requests to resize"
    )


@pytest.mark.parametrize("fit", [Fit(True), None])
@pytest.mark.parametrize(
    "state",
    [
        NONE,
        status(ResizeState.DEFERRED, timedelta(hours=2)),
        status(ResizeState.INFEASIBLE, timedelta(hours=2)),
    ],
)
def test_a_plan_that_fits_is_sent(fit: Fit | None, state: ResizeStatus) -> None:
    # A new target replaces whatever the last resize was waiting for.
    decision = decide(GROW, state, fit, NOW, Policy(), False)
    assert decision == Decision(Action.RESIZE, "app: cpu 1500m, memory 1Gi")


def test_a_plan_that_does_not_fit_is_not_sent_without_evict() -> None:
    decision = decide(GROW, NONE, NO_ROOM, NOW, Policy(), True)
    assert decision.action is Action.NONE
    assert decision.reason == f"{NO_ROOM.reason}; eviction not allowed (--evict)"


def test_a_growth_short_of_room_waits_the_deferred_timeout_before_eviction() -> None:
    """As the kubelet would defer it: a neighbour may shrink or leave meanwhile."""
    waiting = decide(GROW, NONE, NO_ROOM, NOW, EVICT, True, NOW - timedelta(minutes=4))
    assert waiting == Decision(Action.WAIT, f"{NO_ROOM.reason}; waiting up to 0:05:00 for room")
    assert decide(GROW, NONE, NO_ROOM, NOW, EVICT, True).action is Action.WAIT  # first seen now
    evicted = decide(GROW, NONE, NO_ROOM, NOW, EVICT, True, NOW - timedelta(minutes=5))
    assert evicted == Decision(Action.EVICT, f"{NO_ROOM.reason} for 0:05:00")
    at_once = Policy(evict=True, deferred_timeout=timedelta(0))
    assert decide(GROW, NONE, NO_ROOM, NOW, at_once, True).action is Action.EVICT


def test_a_growth_past_the_whole_node_is_evicted_at_once_with_evict() -> None:
    """As the kubelet's Infeasible: waiting would not help."""
    never = Fit(False, "never fits node node-a: cpu needs 5000, 4000 allocatable", never=True)
    assert decide(GROW, NONE, never, NOW, EVICT, True) == Decision(Action.EVICT, never.reason)
    left = decide(GROW, NONE, never, NOW, Policy(), True)
    assert left == Decision(Action.NONE, f"{never.reason}; eviction not allowed (--evict)")


def test_the_no_room_clock_keeps_a_wait_only_while_room_stays_short() -> None:
    clock = NoRoomClock()
    assert clock.since("a", NOW) == NOW
    later = NOW + timedelta(minutes=3)
    assert clock.since("a", later) == NOW  # the same shortage, still waiting
    clock.end_pass()  # "a" was short this pass: its wait goes on
    assert clock.since("a", later) == NOW
    clock.end_pass()
    clock.end_pass()  # a pass without "a": room came (or the pod left)
    assert clock.since("a", later) == later  # a new shortage starts anew


def test_a_pod_without_a_controller_is_never_evicted() -> None:
    decision = decide(GROW, NONE, NO_ROOM, NOW, EVICT, False)
    assert decision.action is Action.NONE
    assert decision.reason == f"{NO_ROOM.reason}; not evicted: no controller would replace it"


def test_at_target_with_nothing_pending_is_left_alone() -> None:
    for policy in (Policy(), EVICT):
        assert decide(AT_TARGET, NONE, None, NOW, policy, True) == Decision(
            Action.NONE, "at its scheduled size"
        )
    sidecar = ResizePlan((), ("proxy: init container, not resized",))
    assert decide(sidecar, NONE, None, NOW, EVICT, True) == Decision(
        Action.NONE, "at its scheduled size; proxy: init container, not resized"
    )


@pytest.mark.parametrize("age", [timedelta(0), timedelta(minutes=4, seconds=59)])
def test_deferred_below_the_timeout_waits(age: timedelta) -> None:
    deferred = status(ResizeState.DEFERRED, age, "Node didn't have enough resource: cpu")
    assert decide(AT_TARGET, deferred, None, NOW, EVICT, True) == Decision(
        Action.WAIT, "resize Deferred"
    )


@pytest.mark.parametrize("age", [timedelta(minutes=5), timedelta(minutes=6)])
def test_deferred_past_the_timeout_is_evicted_with_evict(age: timedelta) -> None:
    deferred = status(ResizeState.DEFERRED, age, "Node didn't have enough resource: cpu")
    decision = decide(AT_TARGET, deferred, None, NOW, EVICT, True)
    assert decision == Decision(
        Action.EVICT, f"resize Deferred for {age}: Node didn't have enough resource: cpu"
    )
    left = decide(AT_TARGET, deferred, None, NOW, Policy(), True)
    assert left.action is Action.NONE
    assert left.reason.startswith(f"resize Deferred for {age}: ")
    assert left.reason.endswith("eviction not allowed (--evict)")
    orphan = decide(AT_TARGET, deferred, None, NOW, EVICT, False)
    assert orphan.action is Action.NONE
    assert orphan.reason.endswith("no controller would replace it")


def test_deferred_without_a_message_has_a_clean_reason() -> None:
    deferred = status(ResizeState.DEFERRED, timedelta(minutes=10))
    assert decide(AT_TARGET, deferred, None, NOW, EVICT, True).reason == (
        "resize Deferred for 0:10:00"
    )


def test_deferred_with_no_transition_time_keeps_waiting() -> None:
    deferred = status(ResizeState.DEFERRED)
    assert decide(AT_TARGET, deferred, None, NOW, EVICT, True).action is Action.WAIT


def test_the_timeouts_are_the_policys() -> None:
    patient = Policy(True, timedelta(minutes=30), timedelta(hours=6))
    deferred = status(ResizeState.DEFERRED, timedelta(minutes=10))
    assert decide(AT_TARGET, deferred, None, NOW, patient, True).action is Action.WAIT
    hasty = Policy(True, timedelta(minutes=1), timedelta(minutes=2))
    assert decide(AT_TARGET, deferred, None, NOW, hasty, True).action is Action.EVICT
    applying = status(ResizeState.IN_PROGRESS, timedelta(minutes=3))
    assert decide(AT_TARGET, applying, None, NOW, hasty, True).action is Action.EVICT
    assert decide(AT_TARGET, applying, None, NOW, patient, True).action is Action.WAIT


@pytest.mark.parametrize("age", [timedelta(0), timedelta(minutes=59, seconds=59)])
def test_in_progress_below_the_timeout_waits(age: timedelta) -> None:
    applying = status(ResizeState.IN_PROGRESS, age)
    assert decide(AT_TARGET, applying, None, NOW, EVICT, True) == Decision(
        Action.WAIT, "resize in progress"
    )


@pytest.mark.parametrize("age", [timedelta(hours=1), timedelta(hours=3)])
def test_in_progress_past_the_timeout_is_evicted_with_evict(age: timedelta) -> None:
    applying = status(ResizeState.IN_PROGRESS, age)
    assert decide(AT_TARGET, applying, None, NOW, EVICT, True) == Decision(
        Action.EVICT, f"resize in progress for {age}"
    )
    left = decide(AT_TARGET, applying, None, NOW, Policy(), True)
    assert left == Decision(
        Action.NONE, f"resize in progress for {age}; eviction not allowed (--evict)"
    )


@pytest.mark.parametrize(
    ("state", "message", "reason"),
    [
        (ResizeState.INFEASIBLE, INFEASIBLE_MESSAGE, f"resize Infeasible: {INFEASIBLE_MESSAGE}"),
        (ResizeState.INFEASIBLE, "", "resize Infeasible"),
        (ResizeState.ERROR, "memory limit below usage", "resize Error: memory limit below usage"),
        (ResizeState.ERROR, "", "resize Error"),
    ],
)
def test_infeasible_and_error_give_up_at_once(
    state: ResizeState, message: str, reason: str
) -> None:
    fresh = status(state, timedelta(0), message)
    assert decide(AT_TARGET, fresh, None, NOW, EVICT, True) == Decision(Action.EVICT, reason)
    assert decide(AT_TARGET, fresh, None, NOW, Policy(), True) == Decision(
        Action.NONE, f"{reason}; eviction not allowed (--evict)"
    )
    assert decide(AT_TARGET, fresh, None, NOW, EVICT, False) == Decision(
        Action.NONE, f"{reason}; not evicted: no controller would replace it"
    )
