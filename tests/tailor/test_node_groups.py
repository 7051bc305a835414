"""The node-group rules the recommender, the webhook and the updater share."""

from __future__ import annotations

from typing import Any

import pytest

from tailor.api.meta import ResourceList
from tailor.api.vpa import (
    RecommendedContainerResources,
    RecommendedPodResources,
    VerticalPodAutoscaler,
)
from tailor.node_groups import (
    DEFAULT_NODE_LABEL,
    GROUP_BY_ANNOTATION,
    GROUPS_ANNOTATION,
    GroupRecommendations,
    NodeGroupError,
    for_node,
    grouping_label,
    node_group,
    pod_node_name,
)


def vpa(
    kind: str = "DaemonSet", annotations: dict[str, str] | None = None
) -> VerticalPodAutoscaler:
    status = {
        "recommendation": {
            "containerRecommendations": [{"containerName": "app", "target": {"cpu": "1"}}]
        }
    }
    return VerticalPodAutoscaler.from_api(
        {
            "metadata": {"name": "agent", "namespace": "ops", "annotations": annotations or {}},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": "agent"}},
            "status": status,
        }
    )


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def figures(**cpu: str) -> GroupRecommendations:
    groups = {
        group: RecommendedPodResources(
            container_recommendations=[
                RecommendedContainerResources(
                    container_name="app", target=ResourceList.from_amounts(float(cores), None)
                )
            ]
        )
        for group, cores in cpu.items()
    }
    return GroupRecommendations(DEFAULT_NODE_LABEL, groups)


def test_daemonsets_group_by_instance_type_unless_the_annotation_says_otherwise() -> None:
    assert grouping_label(vpa()) == DEFAULT_NODE_LABEL
    assert grouping_label(vpa("Deployment")) is None
    assert grouping_label(vpa(annotations={GROUP_BY_ANNOTATION: "none"})) is None
    zone = "topology.kubernetes.io/zone"
    assert grouping_label(vpa("Deployment", {GROUP_BY_ANNOTATION: zone})) == zone
    assert grouping_label(vpa(annotations={GROUP_BY_ANNOTATION: "pool"})) == "pool"
    for bad in ("", "two words", "a/b/c", "-leading", "x" * 64):
        with pytest.raises(NodeGroupError, match=GROUP_BY_ANNOTATION):
            grouping_label(vpa(annotations={GROUP_BY_ANNOTATION: bad}))


def test_a_pod_is_on_its_bound_node_or_the_one_its_affinity_names() -> None:
    assert pod_node_name({"spec": {"nodeName": "n1"}}) == "n1"
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
    affinity: dict[str, Any] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}
    }
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [term]
    }
    assert pod_node_name({"spec": {"affinity": affinity}}) == "n2"
    term["matchFields"][0]["values"] = ["n2", "n3"]  # not one node: unknown
    assert pod_node_name({"spec": {"affinity": affinity}}) is None
    assert pod_node_name({"spec": {}}) is None
    assert pod_node_name({}) is None


def test_the_annotation_reads_back_what_was_written_and_refuses_anything_else() -> None:
    written = figures(small="0.3", big="1.5")
    assert GroupRecommendations.decode(written.encode()) == written
    for bad in ("{", "[]", '{"label": 1, "groups": {}}', '{"label": "x"}'):
        with pytest.raises(NodeGroupError, match=GROUPS_ANNOTATION):
            GroupRecommendations.decode(bad)


def test_a_pod_is_sized_by_its_nodes_group_else_by_the_status() -> None:
    grouped = vpa(annotations={GROUPS_ANNOTATION: figures(small="0.3", big="1.5").encode()})
    sized, group = for_node(grouped, node("n1", **{DEFAULT_NODE_LABEL: "big"}))
    assert group == f"{DEFAULT_NODE_LABEL}=big"
    recommendation = sized.recommendation()
    assert recommendation is not None
    assert recommendation.container_recommendations[0].target.cpu_cores() == 1.5  # type: ignore[index]
    for elsewhere in (node("n2", **{DEFAULT_NODE_LABEL: "huge"}), node("n3"), None):
        assert for_node(grouped, elsewhere) == (grouped, None)
    broken = vpa(annotations={GROUPS_ANNOTATION: "{"})
    assert for_node(broken, node("n1", **{DEFAULT_NODE_LABEL: "big"})) == (broken, None)
    assert node_group(node("n1", pool="a"), "pool") == "a"
