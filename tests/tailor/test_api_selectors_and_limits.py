"""Label selectors and LimitRanges: the API objects pod matching and capping read."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tailor.api import (
    LabelSelector,
    LimitRange,
    LimitRangeItem,
    LimitType,
    ResourceList,
    merged_limit_range_item,
)
from tailor.api.meta import by_namespace


def test_label_selector_semantics() -> None:
    selector = LabelSelector.model_validate(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "edge"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
            ],
        }
    )
    assert selector.matches({"app": "web", "tier": "front"})
    assert selector.matches({"app": "web", "tier": "edge", "zone": "a"})
    assert not selector.matches({"app": "web", "tier": "back"})
    assert not selector.matches({"app": "web", "tier": "front", "canary": "1"})
    assert not selector.matches({"app": "web", "tier": "front", "zone": "b"})
    assert not selector.matches({"tier": "front"})
    assert LabelSelector().matches({"anything": "goes"})
    exists = LabelSelector.model_validate(
        {"matchExpressions": [{"key": "team", "operator": "Exists"}]}
    )
    assert exists.matches({"team": ""}) and not exists.matches({})


@pytest.mark.parametrize(
    ("term", "problem"),
    [
        ({"key": "tier", "operator": "In"}, "non-empty"),
        ({"key": "tier", "operator": "NotIn", "values": []}, "non-empty"),
        ({"key": "tier", "operator": "Exists", "values": ["front"]}, "must be empty"),
        ({"key": "tier", "operator": "DoesNotExist", "values": ["x"]}, "must be empty"),
        ({"key": "", "operator": "Exists"}, "key"),
        ({"key": "tier", "operator": "Gt", "values": ["1"]}, "operator"),
    ],
)
def test_malformed_selector_terms_are_refused(term: dict[str, Any], problem: str) -> None:
    # `In` without values used to match nothing and `Exists` ignored its values, silently.
    with pytest.raises(ValidationError, match=problem) as caught:
        LabelSelector.model_validate({"matchExpressions": [term]})
    assert "matchExpressions.0" in str(caught.value)


REAL_LIMIT_RANGE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": {"name": "limits", "namespace": "shop"},
    "spec": {
        "limits": [
            {
                "type": "Container",
                "max": {"cpu": "2", "memory": "2Gi"},
                "min": {"cpu": "10m", "memory": "16Mi"},
                "default": {"cpu": "500m", "memory": "512Mi"},
                "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
                "maxLimitRequestRatio": {"cpu": "4"},
            },
            {"type": "Pod", "max": {"cpu": "4"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
        ]
    },
}


def test_limit_range_round_trips() -> None:
    limit_range = LimitRange.from_api(REAL_LIMIT_RANGE)
    assert limit_range.to_api() == REAL_LIMIT_RANGE
    container = limit_range.spec.limits[0]
    assert container.max_limit_request_ratio == ResourceList(cpu="4")


def test_negative_limit_range_amounts_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"limits\.0\.max\n.*cpu: -1 is negative"):
        LimitRange.from_api({"spec": {"limits": [{"type": "Container", "max": {"cpu": "-1"}}]}})


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"min": {"cpu": "2"}, "max": {"cpu": "1"}}, "min cpu 2 is above max cpu 1"),
        ({"default": {"memory": "2Gi"}, "max": {"memory": "1Gi"}}, "default memory 2Gi is above"),
        ({"defaultRequest": {"cpu": "1"}, "default": {"cpu": "500m"}}, "defaultRequest cpu 1"),
        ({"min": {"cpu": "1"}, "defaultRequest": {"cpu": "500m"}}, "min cpu 1 is above"),
        ({"maxLimitRequestRatio": {"cpu": "500m"}}, "less than 1"),
        ({"maxLimitRequestRatio": {"memory": "0"}}, "less than 1"),
    ],
)
def test_inconsistent_limit_range_items_are_refused(fields: dict[str, Any], problem: str) -> None:
    # A ratio below 1 used to push limits under requests; crossed bounds were capped silently.
    data = {"spec": {"limits": [{"type": "Container", **fields}]}}
    with pytest.raises(ValidationError, match=problem) as caught:
        LimitRange.from_api(data)
    assert "spec.limits.0" in str(caught.value)


def test_a_pod_item_may_not_carry_defaults() -> None:
    with pytest.raises(ValidationError, match="type is Pod"):
        LimitRangeItem.from_api({"type": "Pod", "default": {"cpu": "1"}})


def test_bounds_from_different_limit_ranges_may_cross_when_merged() -> None:
    ranges = [
        LimitRange.from_api({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
        LimitRange.from_api({"spec": {"limits": [{"type": "Container", "min": {"cpu": "2"}}]}}),
    ]
    merged = merged_limit_range_item(ranges, LimitType.CONTAINER)
    assert merged is not None and merged.max == ResourceList(cpu="1")
    assert merged.min == ResourceList(cpu="2")


def test_limit_ranges_merge_to_the_tightest_bounds() -> None:
    second = LimitRange.from_api(
        {
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "max": {"cpu": "1"},
                        "min": {"memory": "32Mi"},
                        "default": {"cpu": "300m"},
                        "maxLimitRequestRatio": {"cpu": "3", "memory": "2"},
                    }
                ]
            }
        }
    )
    merged = merged_limit_range_item(
        [LimitRange.from_api(REAL_LIMIT_RANGE), second], LimitType.CONTAINER
    )
    assert merged is not None
    assert merged.max == ResourceList(cpu="1", memory="2Gi")
    assert merged.min == ResourceList(cpu="10m", memory="32Mi")
    assert merged.default == ResourceList(cpu="300m", memory="512Mi")
    assert merged.max_limit_request_ratio == ResourceList(cpu="3", memory="2")
    pod = merged_limit_range_item([LimitRange.from_api(REAL_LIMIT_RANGE)], LimitType.POD)
    assert pod is not None and pod.max == ResourceList(cpu="4") and pod.min is None
    assert merged_limit_range_item([second], LimitType.POD) is None


def test_limit_range_item_api_defaults() -> None:
    item = LimitRangeItem.model_validate(
        {
            "type": "Container",
            "max": {"cpu": "2", "memory": "1Gi"},
            "min": {"cpu": "50m"},
            "default": {"memory": "512Mi"},
        }
    ).with_api_defaults()
    # default <- max where unset; defaultRequest <- default, else min.
    assert item.default == ResourceList(cpu="2", memory="512Mi")
    assert item.default_request == ResourceList(cpu="2", memory="512Mi")
    bare = LimitRangeItem.model_validate({"type": "Container", "min": {"cpu": "50m"}})
    assert bare.with_api_defaults().default_request == ResourceList(cpu="50m")
    pod = LimitRangeItem.model_validate({"type": "Pod", "max": {"cpu": "2"}})
    assert pod.with_api_defaults().default is None


def test_objects_are_grouped_by_namespace_in_list_order() -> None:
    def limit_range(namespace: str | None, name: str) -> LimitRange:
        return LimitRange.from_api(
            {"metadata": {"name": name, "namespace": namespace}, "spec": {"limits": []}}
        )

    grouped = by_namespace(
        [
            limit_range("a", "first"),
            limit_range("b", "x"),
            limit_range("a", "second"),
            limit_range(None, "cluster"),
        ]
    )
    assert {ns: [r.metadata.name for r in found] for ns, found in grouped.items()} == {
        "a": ["first", "second"],
        "b": ["x"],
        "": ["cluster"],
    }
    assert by_namespace([]) == {}
