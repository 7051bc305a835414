"""Ending a CPU startup boost: read from the pod's record, held until Ready + the hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tailor.quantity import Quantity
from tailor.startup_boost import BOOST_ANNOTATION, BoostedCpu, BoostRecord
from updater.due_targets import Target
from updater.unboost import startup_boost

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


def record(hold: float = 30.0) -> str:
    q = Quantity.parse
    app = BoostedCpu(q("600m"), q("1200m"), q("200m"), q("400m"))
    sidecar = BoostedCpu(q("150m"), None, q("50m"), None)
    return BoostRecord(hold, {"app": app, "sidecar": sidecar}).to_annotation()


def pod(app_cpu: str = "600m", ready_since: datetime | None = NOW, text: Any = None) -> Any:
    conditions = []
    if ready_since is not None:
        stamp = ready_since.isoformat().replace("+00:00", "Z")
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": stamp})
    return {
        "metadata": {"annotations": {BOOST_ANNOTATION: record() if text is None else text}},
        "spec": {
            "containers": [
                {"name": "app", "resources": {"requests": {"cpu": app_cpu}}},
                {"name": "sidecar", "resources": {"requests": {"cpu": "150m"}}},
            ]
        },
        "status": {"phase": "Running", "conditions": conditions},
    }


def test_the_boost_holds_until_the_pod_has_been_ready_for_its_hold() -> None:
    boost = startup_boost(pod())
    assert boost is not None and boost.still_boosted(pod()) == ["app", "sidecar"]
    assert startup_boost(pod(ready_since=None)).waiting(pod(ready_since=None), NOW) == (  # type: ignore[union-attr]
        "startup CPU boost until the pod is Ready"
    )
    assert boost.waiting(pod(), NOW + timedelta(seconds=29)) == (
        "startup CPU boost until 2026-11-23T12:00:30+00:00 (Ready + 0:00:30)"
    )
    assert boost.waiting(pod(), NOW + timedelta(seconds=30)) is None


def test_it_ends_at_the_admitted_cpu_or_the_schedules() -> None:
    boost = startup_boost(pod())
    assert boost is not None
    assert boost.targets(pod(), None) == {
        "app": Target(0.2, None, None),
        "sidecar": Target(0.05, None, None),
    }
    scheduled = {"app": Target(0.3, 2.0**28, 2.0**29)}
    assert boost.targets(pod(), scheduled)["app"] == Target(0.3, 2.0**28, 2.0**29)


def test_a_pod_resized_since_or_an_unreadable_record_is_not_boosted() -> None:
    resized = pod(app_cpu="200m")
    boost = startup_boost(resized)
    assert boost is not None and boost.still_boosted(resized) == ["sidecar"]
    assert list(boost.targets(resized, None)) == ["sidecar"]
    done = pod(app_cpu="200m")
    done["spec"]["containers"][1]["resources"]["requests"]["cpu"] = "50m"
    assert startup_boost(done) is None
    for text in (
        "not json",
        '{"containers": {"app": {}}}',
        '{"holdSeconds": -1, "containers": {}}',
    ):
        assert startup_boost(pod(text=text)) is None
    assert startup_boost({"metadata": {}, "spec": {"containers": []}}) is None
