"""The Event recording rule the three services share: aggregation and rate limit."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from tailor.events import BURST, REFILL, WARNING, EventRecorder, ObjectRef, QueuedRecorder

POD = ObjectRef("v1", "Pod", "shop", "web-1", "uid-1")


class Sink:
    """The Event API's two writes, kept in order (the real API is tested in tests/cluster)."""

    def __init__(self, refuse: bool = False) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []
        self.refuse = refuse

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        if self.refuse:
            raise RuntimeError("403 Forbidden")
        self.created.append(body)

    def patch_event(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.patched.append((name, body))


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 1, 16, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_a_repeat_patches_the_first_events_count_instead_of_creating_another() -> None:
    sink, clock = Sink(), Clock()
    recorder = EventRecorder(sink, "kube-tailor-updater", "host", clock)
    assert recorder.record(POD, WARNING, "ResizeDeferred", "Node didn't have enough resource")
    clock.now += timedelta(minutes=1)
    assert recorder.record(POD, WARNING, "ResizeDeferred", "Node didn't have enough resource")
    [event] = sink.created
    assert event["involvedObject"] == {
        "apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web-1", "uid": "uid-1"
    }  # fmt: skip
    assert (event["reason"], event["type"], event["count"]) == ("ResizeDeferred", "Warning", 1)
    assert event["source"] == {"component": "kube-tailor-updater"}
    assert sink.patched == [
        (event["metadata"]["name"], {"count": 2, "lastTimestamp": "2026-11-29T01:17:00Z"})
    ]
    recorder.record(POD, WARNING, "ResizeDeferred", "another message")
    assert len(sink.created) == 2  # a different message is a new Event


def test_each_object_gets_a_burst_then_one_event_per_refill_period() -> None:
    sink, clock = Sink(), Clock()
    recorder = EventRecorder(sink, "c", "host", clock)
    said = [recorder.record(POD, "Normal", "R", f"m{i}") for i in range(BURST + 3)]
    assert said == [True] * BURST + [False] * 3
    other = ObjectRef("v1", "Pod", "shop", "web-2")
    assert recorder.record(other, "Normal", "R", "m")  # the limit is per object
    clock.now += REFILL
    assert recorder.record(POD, "Normal", "R", "later")
    assert not recorder.record(POD, "Normal", "R", "later again")


def test_an_event_that_cannot_be_written_never_fails_the_caller() -> None:
    recorder = EventRecorder(Sink(refuse=True), "c", "host", Clock())
    assert not recorder.record(POD, "Normal", "R", "m")
    unnamed = ObjectRef("v1", "Pod", "shop", "")  # a pod not named yet
    assert not EventRecorder(Sink(), "c", "host", Clock()).record(unnamed, "Normal", "R", "m")


def test_long_messages_are_cut_to_what_the_api_keeps() -> None:
    sink = Sink()
    EventRecorder(sink, "c", "host", Clock()).record(POD, "Normal", "R", "x" * 5000)
    assert len(sink.created[0]["message"]) == 1024


def test_an_event_that_happened_several_times_is_written_with_its_count() -> None:
    sink = Sink()
    recorder = EventRecorder(sink, "test", clock=Clock())
    assert recorder.record(POD, WARNING, "Sized", "sized", times=7)
    assert recorder.record(POD, WARNING, "Sized", "sized", times=3)
    [created] = sink.created
    assert created["count"] == 7
    assert [patch["count"] for _, patch in sink.patched] == [10]


class _SlowRecorder:
    def __init__(self) -> None:
        self.written: list[str] = []

    def record(
        self, about: ObjectRef, kind: str, reason: str, message: str, times: int = 1
    ) -> bool:
        time.sleep(0.02)  # an API call under way
        self.written.append(message)
        return True


def test_closing_the_queue_writes_what_is_queued_and_ends_its_thread() -> None:
    slow = _SlowRecorder()
    queued = QueuedRecorder(slow)
    for index in range(10):
        assert queued.record(POD, WARNING, "Sized", f"event {index}")
    queued.close(timeout=5)
    assert slow.written == [f"event {index}" for index in range(10)]
    assert not queued._thread.is_alive()  # no thread left inside a call at exit
