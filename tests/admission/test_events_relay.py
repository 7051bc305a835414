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
