"""The updater's counters, read back from the registry the service exposes."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from tailor.cli.follow import UpdaterMetrics
from updater.decide import Action
from updater.follow import Outcome
from updater.pressure import PRESSURE


def _outcome(action: Action, detail: str, applied: bool = True) -> Outcome:
    return Outcome("shop", "web-1", "web", action, detail, applied)


def test_pressure_raises_are_counted_apart_from_the_other_resizes() -> None:
    registry = CollectorRegistry()
    metrics = UpdaterMetrics(registry)
    raise_detail = f"{PRESSURE} (app stalled 14% of the last 120 s at 234Mi); resized"
    metrics.count(
        [
            _outcome(Action.RESIZE, raise_detail),
            _outcome(Action.RESIZE, raise_detail, applied=False),
            _outcome(Action.RESIZE, "period 09:00 in force; resized"),
            _outcome(Action.NONE, f"{PRESSURE}: not raised: its policy allows no more memory"),
        ]
    )

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    raises = "tailor_updater_memory_pressure_raises_total"
    assert value(raises, applied="true") == 1
    assert value(raises, applied="false") == 1
    pods = "tailor_updater_pods_total"
    assert value(pods, action="resize", applied="true") == 2
    assert value(pods, action="resize", applied="false") == 1
    assert value(pods, action="none", applied="true") == 1
