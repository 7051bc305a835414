"""Where a resize stands, from PodResizePending / PodResizeInProgress and their generations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.updater.pods import condition, container, pod
from updater.resize_status import ResizeState, ResizeStatus, resize_status

SINCE = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def with_conditions(*conditions: dict[str, Any], generation: int | None = 2) -> dict[str, Any]:
    ready = condition("Ready")
    return pod([container("app")], conditions=[ready, *conditions], generation=generation)


def pending(reason: str = "Deferred", **kwargs: Any) -> dict[str, Any]:
    return condition("PodResizePending", reason, **kwargs)


def in_progress(reason: str = "", **kwargs: Any) -> dict[str, Any]:
    return condition("PodResizeInProgress", reason, **kwargs)


def test_no_resize_conditions_is_none() -> None:
    assert resize_status(with_conditions()) == ResizeStatus(ResizeState.NONE)
    bare = pod([container("app")])
    del bare["status"]
    assert resize_status(bare).state is ResizeState.NONE


@pytest.mark.parametrize(
    ("conditions", "state"),
    [
        ([pending("Deferred")], ResizeState.DEFERRED),
        ([pending("Infeasible")], ResizeState.INFEASIBLE),
        ([pending("SomethingNew")], ResizeState.DEFERRED),  # unknown reasons read as Deferred
        ([pending("")], ResizeState.DEFERRED),
        ([in_progress()], ResizeState.IN_PROGRESS),
        ([in_progress("Error")], ResizeState.ERROR),
        ([in_progress("Retrying")], ResizeState.IN_PROGRESS),
        # Both at once: the answer about the newest spec is the pending one.
        ([in_progress(), pending("Deferred")], ResizeState.DEFERRED),
        ([pending("Infeasible"), in_progress()], ResizeState.INFEASIBLE),
        ([pending("Infeasible"), in_progress("Error")], ResizeState.INFEASIBLE),
        ([in_progress("Error"), pending("Deferred")], ResizeState.DEFERRED),
    ],
)
def test_condition_combinations(conditions: list[dict[str, Any]], state: ResizeState) -> None:
    assert resize_status(with_conditions(*conditions)).state is state


def test_time_and_message_come_from_the_deciding_condition() -> None:
    message = "Node didn't have enough resource: cpu, requested: 5000, used: 1000, capacity: 4000"
    status = resize_status(
        with_conditions(
            in_progress(since="2024-05-01T09:00:00Z", message="applying"),
            pending("Deferred", since="2024-05-01T10:00:00Z", message=message),
        )
    )
    assert status == ResizeStatus(ResizeState.DEFERRED, SINCE, message)
    error = resize_status(with_conditions(in_progress("Error", message="OOM on shrink")))
    assert error == ResizeStatus(ResizeState.ERROR, SINCE, "OOM on shrink")


@pytest.mark.parametrize(
    ("observed", "generation", "counts"),
    [
        (1, 2, False),  # about a spec since replaced
        (2, 2, True),
        (3, 2, True),
        (None, 2, True),  # kubelets that do not report it
        (1, None, True),
    ],
)
def test_conditions_observed_for_an_older_generation_are_ignored(
    observed: int | None, generation: int | None, counts: bool
) -> None:
    target = with_conditions(pending("Infeasible", observed=observed), generation=generation)
    expected = ResizeState.INFEASIBLE if counts else ResizeState.NONE
    assert resize_status(target).state is expected
    target = with_conditions(in_progress("Error", observed=observed), generation=generation)
    expected = ResizeState.ERROR if counts else ResizeState.NONE
    assert resize_status(target).state is expected


def test_a_stale_pending_answer_gives_way_to_a_current_in_progress() -> None:
    target = with_conditions(
        pending("Infeasible", observed=2), in_progress(observed=3), generation=3
    )
    assert resize_status(target).state is ResizeState.IN_PROGRESS


def test_a_current_pending_answer_beats_a_stale_error() -> None:
    target = with_conditions(
        in_progress("Error", observed=2), pending("Deferred", observed=3), generation=3
    )
    assert resize_status(target).state is ResizeState.DEFERRED


def test_conditions_that_are_not_true_are_ignored() -> None:
    target = with_conditions(pending("Infeasible", status="False"), in_progress(status="Unknown"))
    assert resize_status(target).state is ResizeState.NONE


@pytest.mark.parametrize("since", ["", "not a time", "2024-13-01T00:00:00Z", "2024-05-01T00:00:00"])
def test_an_unreadable_transition_time_leaves_since_empty(since: str) -> None:
    status = resize_status(with_conditions(pending("Deferred", since=since)))
    assert status.state is ResizeState.DEFERRED
    assert status.since is None


def test_a_missing_transition_time_leaves_since_empty() -> None:
    deferred = pending("Deferred")
    del deferred["lastTransitionTime"]
    assert resize_status(with_conditions(deferred)) == ResizeStatus(ResizeState.DEFERRED)
