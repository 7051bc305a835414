"""The HPA target arithmetic and its baseline (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tailor.api.vpa import VerticalPodAutoscaler
from tailor.hpa import hpa_conflicts
from tailor.hpa_coordination import (
    BASELINE_ANNOTATION,
    COORDINATE_ANNOTATION,
    coordinated_utilization,
    coordinates,
    hpa_rewrite,
    mean_request,
)


def vpa(annotations: dict[str, str] | None = None) -> VerticalPodAutoscaler:
    return VerticalPodAutoscaler.from_api(
        {
            "metadata": {"name": "web", "namespace": "shop", "annotations": annotations or {}},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "updatePolicy": {"updateMode": "InPlace"},
            },
        }
    )


def spec(cpu: str | None, memory: str = "128Mi", name: str = "app") -> dict[str, Any]:
    requests = {"memory": memory} | ({"cpu": cpu} if cpu else {})
    return {"containers": [{"name": name, "resources": {"requests": requests}}]}


def pod(cpu: str | None, memory: str = "128Mi") -> dict[str, Any]:
    return {"spec": spec(cpu, memory)}


def metric(resource: str, value: int, container: str | None = None) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": value}
    if container is None:
        return {"type": "Resource", "resource": {"name": resource, "target": target}}
    source = {"name": resource, "container": container, "target": target}
    return {"type": "ContainerResource", "containerResource": source}


def hpa(*metrics: dict[str, Any], baseline: dict[str, Any] | None = None) -> dict[str, Any]:
    annotations = {BASELINE_ANNOTATION: json.dumps(baseline)} if baseline else {}
    return {
        "metadata": {"name": "web", "namespace": "shop", "annotations": annotations},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "metrics": list(metrics),
        },
    }


def test_the_scale_out_point_in_absolute_usage_stays_where_it_was() -> None:
    doubled = coordinated_utilization(70, 0.25, 0.5)
    assert (doubled.value, doubled.held) == (35, False)  # 70 % of 250m = 35 % of 500m
    halved = coordinated_utilization(40, 1.0, 0.5)
    assert (halved.value, halved.held) == (80, False)
    low = coordinated_utilization(70, 0.25, 5.0)  # 3.5 %: scale-out on noise
    assert (low.value, low.held) == (10, True)
    high = coordinated_utilization(80, 1.0, 0.5)  # 160 %: never before saturation
    assert (high.value, high.held) == (95, True)
    assert "held to 10..95% from 3.5%" in low.explain("cpu", 70, 0.25, 5.0)
    with pytest.raises(ValueError, match="positive"):
        coordinated_utilization(70, 0.0, 0.5)


def test_coordination_is_opt_in_and_then_no_conflict() -> None:
    assert not coordinates(vpa())
    assert not coordinates(vpa({COORDINATE_ANNOTATION: "yes"}))
    on = vpa({COORDINATE_ANNOTATION: "True"})
    assert coordinates(on)
    scaled = [hpa(metric("cpu", 70))]
    assert [c.resource for c in hpa_conflicts(vpa(), scaled)] == ["cpu"]
    assert hpa_conflicts(on, scaled) == []


def test_the_rewrite_keeps_the_owners_target_and_follows_a_new_one() -> None:
    template = spec("250m")
    pods = [pod("500m"), pod("500m")]
    first = hpa_rewrite(hpa(metric("cpu", 70)), template, pods)
    assert first is not None
    assert first.baseline == {"cpu": {"owner": 70, "written": 35}}
    assert first.patch()["spec"]["metrics"] == [metric("cpu", 35)]
    # rewritten already, pods unchanged: nothing to do
    done = hpa(metric("cpu", 35), baseline=first.baseline)
    assert hpa_rewrite(done, template, pods) is None
    # the pods grew again: still the owner's 70 % of 250m
    grown = hpa_rewrite(done, template, [pod("1")])
    assert grown is not None and grown.baseline == {"cpu": {"owner": 70, "written": 18}}
    # the owner changed the target since: that is the baseline now
    edited = hpa(metric("cpu", 60), baseline=first.baseline)
    again = hpa_rewrite(edited, template, pods)
    assert again is not None and again.baseline == {"cpu": {"owner": 60, "written": 30}}


def test_only_utilization_targets_with_requests_to_divide_by_are_rewritten() -> None:
    absolute = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "200m"}},
    }
    memory = metric("memory", 80, container="app")
    found = hpa_rewrite(hpa(absolute, memory), spec("250m", "100Mi"), [pod("250m", "200Mi")])
    assert found is not None
    assert found.patch()["spec"]["metrics"] == [absolute, metric("memory", 40, container="app")]
    assert found.explain().startswith("HPA web: container app's memory target 80% of 100Mi")
    # a template without a cpu request: the HPA's target is left as it is
    assert hpa_rewrite(hpa(metric("cpu", 70)), spec(None), [pod("500m")]) is None
    assert mean_request([pod("100m"), pod("300m"), pod(None)], "cpu") == pytest.approx(0.2)
