"""A worker's Events counted and handed to the parent, which writes them."""

from __future__ import annotations

from typing import Any

from admission.events import RelayedEvents, record_relayed
from tailor.events import NORMAL, ObjectRef

VPA = ObjectRef("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "shop", "web")
OTHER = ObjectRef("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "shop", "api")


class Written:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def record(
        self, about: ObjectRef, kind: str, reason: str, message: str, times: int = 1
    ) -> bool:
        self.calls.append((about.name, message, times))
        return True


def test_identical_events_are_relayed_once_with_their_count_and_taken_once() -> None:
    relayed = RelayedEvents()
    for _ in range(5):
        relayed.record(VPA, NORMAL, "PodSized", "Pod web-* sized")
    relayed.record(OTHER, NORMAL, "PodSized", "Pod api-* sized")
    written = Written()
    record_relayed(written, relayed.take())
    assert sorted(written.calls) == [("api", "Pod api-* sized", 1), ("web", "Pod web-* sized", 5)]
    assert relayed.take() == []


def test_what_every_worker_relayed_is_gathered_into_one_call_per_event() -> None:
    workers = [RelayedEvents(), RelayedEvents()]
    for worker in workers:
        for _ in range(3):
            worker.record(VPA, NORMAL, "PodSized", "Pod web-* sized")
    workers[1].record(OTHER, NORMAL, "PodSized", "Pod api-* sized")
    gathered = RelayedEvents()
    for _ in range(2):  # two sends of each worker before the parent writes
        for worker in workers:
            gathered.add(worker.take())
        workers[0].record(VPA, NORMAL, "PodSized", "Pod web-* sized")
    written = Written()
    record_relayed(written, gathered.take())
    assert sorted(written.calls) == [("api", "Pod api-* sized", 1), ("web", "Pod web-* sized", 7)]
