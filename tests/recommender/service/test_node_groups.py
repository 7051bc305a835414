"""The recommender's node-group writes on a cluster held in memory: what is written, kept,
removed and refused (the real path: test_node_groups_cluster.py)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from recommender.service.node_groups import write_node_groups
from recommender.service.status import ROW_COLUMNS, ServedVpa
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.node_groups import (
    DEFAULT_NODE_LABEL,
    GROUP_BY_ANNOTATION,
    GROUPS_ANNOTATION,
    GroupRecommendations,
)
from tests.in_memory_cluster import InMemoryCluster

LABEL = DEFAULT_NODE_LABEL


def vpa_object(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "agent", "namespace": "ops", "annotations": annotations or {}},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent"}},
    }


def pod(name: str, node: str) -> dict[str, Any]:
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "1"}
    return {
        "metadata": {"name": name, "namespace": "ops", "ownerReferences": [owner]},
        "spec": {"nodeName": node, "containers": [{"name": "app"}]},
        "status": {"phase": "Running"},
    }


def usage() -> pd.DataFrame:
    """One sample per pod: its cpu is what the fake model recommends for its group."""
    return pd.DataFrame(
        {"namespace": "ops", "workload": "agent", "pod": ["a-1", "b-1", "c-1"], "container": "app"}
        | {"cpu": [0.2, 1.5, 9.0], "memory": [300 * 2**20] * 3}
    )


def refit(entry: ServedVpa, history: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """A stand-in model: the target is the group's largest cpu, bounds around it."""
    cpu, memory = float(history["cpu"].max()), float(history["memory"].max())
    row: dict[str, object] = {"namespace": "ops", "workload": "agent", "container": "app"}
    for bound, factor in (("target", 1.0), ("lower", 0.8), ("upper", 1.2)):
        row |= {f"cpu_{bound}": cpu * factor, f"memory_{bound}": memory * factor}
    return pd.DataFrame([row], columns=ROW_COLUMNS)


def served(cluster: InMemoryCluster) -> list[ServedVpa]:
    [found] = cluster.vpa_objects
    entry = ServedVpa(VerticalPodAutoscaler.from_api(found), {"agent"}, {"app"})
    entry.pods = {"a-1", "b-1", "c-1"}
    return [entry]


def cluster(annotations: dict[str, str] | None = None) -> InMemoryCluster:
    return InMemoryCluster(
        pod_objects=[pod("a-1", "small"), pod("b-1", "big"), pod("c-1", "bare")],
        nodes_by_name={
            "small": {"metadata": {"name": "small", "labels": {LABEL: "t3.small"}}},
            "big": {"metadata": {"name": "big", "labels": {LABEL: "m5.8xlarge"}}},
            "bare": {"metadata": {"name": "bare", "labels": {}}},
        },
        vpa_objects=[vpa_object(annotations)],
    )


def annotation(found: InMemoryCluster) -> str | None:
    return found.vpa_objects[0]["metadata"].get("annotations", {}).get(GROUPS_ANNOTATION)


def test_each_group_gets_its_pods_figures_and_a_pod_of_no_group_none() -> None:
    found = cluster()
    events = pd.DataFrame(columns=["namespace", "pod"])
    report = write_node_groups(found, served(found), usage(), events, refit)
    assert report.written == [f"ops/agent: {LABEL}: m5.8xlarge, t3.small"]
    text = annotation(found)
    assert text is not None
    groups = GroupRecommendations.decode(text).groups
    cpu = {name: g.container_recommendations[0].target.cpu_cores() for name, g in groups.items()}  # type: ignore[index]
    assert cpu == {"t3.small": 0.2, "m5.8xlarge": 1.5}  # the bare node's 9 cores in neither
    # the same figures again: not written again
    writes = len(found.writes)
    write_node_groups(found, served(found), usage(), events, refit)
    assert len(found.writes) == writes


def test_no_history_keeps_the_figures_and_grouping_off_removes_them() -> None:
    found = cluster({GROUPS_ANNOTATION: "kept"})
    assert write_node_groups(found, served(found), None, None, refit).written == []
    assert annotation(found) == "kept"
    off = cluster({GROUPS_ANNOTATION: "kept", GROUP_BY_ANNOTATION: "none"})
    write_node_groups(off, served(off), usage(), pd.DataFrame(), refit)
    assert annotation(off) is None


def test_a_bad_label_or_a_refused_write_is_said_and_changes_nothing() -> None:
    bad = cluster({GROUP_BY_ANNOTATION: "not a label"})
    report = write_node_groups(bad, served(bad), usage(), pd.DataFrame(), refit)
    assert report.problems == [
        f"ops/agent: {GROUP_BY_ANNOTATION}: 'not a label' is not a node label key (or 'none')"
    ]
    assert annotation(bad) is None
    refused = cluster()
    refused.refuse["annotate-vpa"] = (403, "forbidden")
    report = write_node_groups(refused, served(refused), usage(), pd.DataFrame(), refit)
    assert report.problems == [f"ops/agent: {GROUPS_ANNOTATION} not written: forbidden"]
