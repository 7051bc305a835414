"""What the recommender says in Events: a recommendation's moves, a kill taken in once."""

from __future__ import annotations

from typing import Any

import pandas as pd

from recommender.service.events import CHANGED, OOM_TAKEN, RecommenderEvents, changes
from tailor.events import ObjectRef

VPA = ObjectRef("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "shop", "web", "u")


def recommendation(cpu: str, memory: str) -> dict[str, Any]:
    target = {"cpu": cpu, "memory": memory}
    return {"containerRecommendations": [{"containerName": "app", "target": target}]}


class Said:
    def __init__(self) -> None:
        self.events: list[tuple[ObjectRef, str, str, str]] = []

    def record(self, about: ObjectRef, kind: str, reason: str, message: str) -> bool:
        self.events.append((about, kind, reason, message))
        return True


def test_only_moved_targets_are_said() -> None:
    assert changes(recommendation("250m", "256Mi"), recommendation("400m", "256Mi")) == (
        "app: cpu 250m -> 400m"
    )
    assert changes(None, recommendation("1", "1Gi")) == "app: cpu none -> 1, memory none -> 1Gi"
    assert changes(recommendation("1", "1Gi"), recommendation("1", "1Gi")) == ""


def test_a_kill_is_told_once_on_the_vpa_and_the_pod() -> None:
    said = Said()
    events = RecommenderEvents(said)
    kills = pd.DataFrame(
        {
            "timestamp": [pd.Timestamp("2026-11-29 01:10", tz="UTC")],
            "namespace": ["shop"],
            "workload": ["web"],
            "pod": ["web-1"],
            "container": ["app"],
            "reason": ["OOMKilled"],
            "memory": [2.0**28],
        }
    )
    after = recommendation("250m", "400Mi")
    events.after_write(VPA, recommendation("250m", "300Mi"), after, {"web"}, kills)
    events.after_write(VPA, after, after, {"web"}, kills)  # the next pass: nothing new
    assert [(e[0].kind, e[2]) for e in said.events] == [
        ("VerticalPodAutoscaler", CHANGED),
        ("VerticalPodAutoscaler", OOM_TAKEN),
        ("Pod", OOM_TAKEN),
    ]
    assert said.events[1][3] == (
        "container app of pod web-1 was OOM-killed at 2026-11-29 01:10:00 UTC; the memory "
        "recommendation takes it into account: target 400Mi"
    )
