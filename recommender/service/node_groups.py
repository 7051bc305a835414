"""A DaemonSet's recommendation per node group, kept in the VPA's annotation.

The rules (which label, which node a pod is on, the annotation's format) are
`tailor.node_groups`; this is the recommender's part. After the pass's model run,
each grouped VPA's pods are split by their node's label value, the model is run
again on each group's history alone, and the group's rows become that group's
recommendation, capped by the VPA's resource policy like the status one. The pods
are those running now: a pod that is gone no longer says which node it ran on (the
history carries no node), so its history counts in the VPA's status recommendation
only. The annotation is written only when it changes, kept as it is when a pass
reads no history for the pods (as the status recommendation is), and removed when
grouping is turned off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from recommender.service.status import ServedVpa, container_recommendations
from tailor.api.vpa import RecommendedPodResources
from tailor.cluster_port import Json, RecommenderCluster
from tailor.node_groups import (
    GROUPS_ANNOTATION,
    GroupRecommendations,
    NodeGroupError,
    grouping_label,
    node_group,
)
from tailor.workloads import pod_workload

# (the VPA, the usage and events of one group's pods) -> the model's rows for them
Refit = Callable[[ServedVpa, pd.DataFrame, pd.DataFrame], pd.DataFrame]


@dataclass
class GroupReport:
    """What the pass did with node groups, for its report."""

    written: list[str] = field(default_factory=list)  # "ns/vpa: label: group, group"
    problems: list[str] = field(default_factory=list)  # "ns/vpa: why", nothing written


def pods_by_group(
    entry: ServedVpa, pods: Iterable[Json], nodes: Mapping[str, Json], label: str
) -> dict[str, set[str]]:
    """The names of the VPA's running pods by their node's value of `label` (pods on a node
    without it, or not bound yet, are in no group)."""
    groups: dict[str, set[str]] = {}
    for pod in pods:
        metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if metadata.get("namespace") != entry.vpa.namespace:
            continue
        name = str(metadata.get("name", ""))
        if name not in entry.pods or pod_workload(pod) not in entry.workloads:
            continue
        group = node_group(nodes.get(str(spec.get("nodeName"))), label)
        if group is not None:
            groups.setdefault(group, set()).add(name)
    return groups


def _of_pods(frame: pd.DataFrame, namespace: str, names: set[str]) -> pd.DataFrame:
    chosen = (frame["namespace"] == namespace) & frame["pod"].isin(sorted(names))
    return frame[chosen].reset_index(drop=True)


def group_figures(
    entry: ServedVpa,
    label: str,
    members: Mapping[str, set[str]],
    usage: pd.DataFrame,
    events: pd.DataFrame,
    refit: Refit,
) -> GroupRecommendations:
    """Each group's recommendation: the model on that group's pods' history alone."""
    groups: dict[str, RecommendedPodResources] = {}
    for group, names in sorted(members.items()):
        history = _of_pods(usage, entry.vpa.namespace, names)
        if history.empty:
            continue
        happened = _of_pods(events, entry.vpa.namespace, names) if "pod" in events else events
        containers = container_recommendations(entry, refit(entry, history, happened))
        if containers:
            groups[group] = RecommendedPodResources(container_recommendations=containers)
    return GroupRecommendations(label, groups)


def write_node_groups(
    cluster: RecommenderCluster,
    entries: Iterable[ServedVpa],
    usage: pd.DataFrame | None,
    events: pd.DataFrame | None,
    refit: Refit,
) -> GroupReport:
    """Recommend per node group for every grouped VPA and write what changed."""
    report = GroupReport()
    grouped = []
    for entry in entries:
        label_of = f"{entry.vpa.namespace}/{entry.vpa.name}"
        try:
            label = grouping_label(entry.vpa)
        except NodeGroupError as error:
            report.problems.append(f"{label_of}: {error}")
            continue
        if label is not None or GROUPS_ANNOTATION in (entry.vpa.metadata.annotations or {}):
            grouped.append((entry, label))
    if not grouped:
        return report
    pods, nodes = cluster.pods(), cluster.nodes()
    for entry, label in grouped:
        where = f"{entry.vpa.namespace}/{entry.vpa.name}"
        text = None  # grouping turned off: the figures go
        if label is not None:
            if usage is None or events is None:
                continue  # no history this pass: the last figures stay, as the status's do
            members = pods_by_group(entry, pods, nodes, label)
            figures = group_figures(entry, label, members, usage, events, refit)
            if not figures.groups:
                continue
            text = figures.encode()
            report.written.append(f"{where}: {label}: {', '.join(sorted(figures.groups))}")
        before = (entry.vpa.metadata.annotations or {}).get(GROUPS_ANNOTATION)
        if before == text:
            continue
        answer = cluster.annotate_vpa(
            entry.vpa.namespace, entry.vpa.name, {GROUPS_ANNOTATION: text}
        )
        if not answer.accepted:
            report.problems.append(f"{where}: {GROUPS_ANNOTATION} not written: {answer.message}")
    return report
