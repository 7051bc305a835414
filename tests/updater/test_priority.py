"""Upstream's updater order: scale-ups first, then the largest relative change (pure)."""

from __future__ import annotations

from tailor.quantity import Quantity
from updater.plan import ContainerResize, ResizePlan
from updater.priority import priority
from updater.resources import Json


def pod(**requests: str) -> Json:
    return {"spec": {"containers": [{"name": "app", "resources": {"requests": requests}}]}}


def plan(**requests: str) -> ResizePlan:
    wanted = {r: Quantity.parse(q) for r, q in requests.items()}
    return ResizePlan((ContainerResize("app", wanted, {}),))


def test_a_scale_up_of_any_resource_goes_before_any_scale_down() -> None:
    up = priority(pod(cpu="1", memory="1Gi"), plan(cpu="1", memory="1100Mi"))
    down = priority(pod(cpu="1", memory="1Gi"), plan(cpu="100m"))
    assert up < down
    assert up[0] == 0 and down[0] == 1


def test_among_scale_ups_the_largest_relative_change_goes_first() -> None:
    fivefold = priority(pod(cpu="200m"), plan(cpu="1"))
    third = priority(pod(cpu="900m"), plan(cpu="1200m"))
    assert fivefold < third
    assert fivefold == (0, -4.0)  # |1000 - 200| / 200


def test_cpu_and_memory_changes_add_up_and_unset_resources_count_for_nothing() -> None:
    both = priority(pod(cpu="1", memory="1Gi"), plan(cpu="1500m", memory="512Mi"))
    assert both == (0, -1.0)  # +0.5 cpu, -0.5 memory
    cpu_only = priority(pod(cpu="1"), plan(cpu="2"))
    assert cpu_only == (0, -1.0)


def test_one_container_growing_makes_a_scale_up_though_the_pod_shrinks() -> None:
    """Upstream judges a scale-up per container: the growing one is short of resources."""
    two = {
        "spec": {
            "containers": [
                {"name": n, "resources": {"requests": {"cpu": "500m"}}} for n in ("app", "side")
            ]
        }
    }
    mixed = ResizePlan(
        (
            ContainerResize("app", {"cpu": Quantity.parse("600m")}, {}),
            ContainerResize("side", {"cpu": Quantity.parse("300m")}, {}),
        )
    )
    assert priority(two, mixed) == (0, -0.1)  # the pod's total falls by a tenth
