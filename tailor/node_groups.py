"""Per-node-group recommendations of a DaemonSet's VPA: the grouping key, the node of a
pod and where the per-group figures are kept (pure).

A DaemonSet runs one pod per node, and an agent on a 96-core node does more work
than the same agent on a 2-core one: one recommendation for both oversizes the
small nodes or starves the big ones. The recommender groups the pods by a node
label (`node.kubernetes.io/instance-type` unless the VPA's annotation
`kube-tailor.io/group-by-node-label` names another; "none" turns grouping off)
and recommends per group. The VPA API has no field for that, so the figures go to
the VPA's annotation `kube-tailor.io/node-group-recommendations` (JSON), which the
webhook and the updater read from the VPA they already hold: each pod is sized by
its node's group, and by the VPA's status recommendation (every pod's history
together) where its node is in no group yet. The three components must agree on
these rules, so they live here once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from tailor.api.vpa import (
    RecommendedPodResources,
    VerticalPodAutoscaler,
    VerticalPodAutoscalerStatus,
)

Json = Mapping[str, Any]
GROUP_BY_ANNOTATION = "kube-tailor.io/group-by-node-label"
GROUPS_ANNOTATION = "kube-tailor.io/node-group-recommendations"
DEFAULT_NODE_LABEL = "node.kubernetes.io/instance-type"
NO_GROUPING = "none"
GROUPED_KINDS = frozenset({"DaemonSet"})  # grouped by default; others when annotated
# where the DaemonSet controller names the pod's node before the scheduler binds it
NODE_NAME_FIELD = "metadata.name"
# a label key: an optional DNS-subdomain prefix and "/", then a name of at most 63 characters
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_KEY = re.compile(rf"^({_PREFIX}/)?{_NAME}$")


class NodeGroupError(ValueError):
    """A grouping annotation that cannot be read: said on the VPA, nothing grouped."""


def grouping_label(vpa: VerticalPodAutoscaler) -> str | None:
    """The node label the VPA's pods are grouped by; None: not grouped. NodeGroupError
    when its annotation is not a label key (nor "none")."""
    annotations = vpa.metadata.annotations or {}
    text = annotations.get(GROUP_BY_ANNOTATION)
    if text is None:
        return DEFAULT_NODE_LABEL if vpa.spec.target_ref.kind in GROUPED_KINDS else None
    text = text.strip()
    if text == NO_GROUPING:
        return None
    if len(text) > 253 + 1 + 63 or not _LABEL_KEY.match(text):
        raise NodeGroupError(
            f"{GROUP_BY_ANNOTATION}: {text!r} is not a node label key (or {NO_GROUPING!r})"
        )
    return text


def pod_node_name(pod: Json) -> str | None:
    """The node the pod runs or will run on: spec.nodeName once bound; before that, for a
    DaemonSet's pod, the one node its required node affinity names by `metadata.name`
    (how the DaemonSet controller pins each pod since Kubernetes 1.12)."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return None
    bound = spec.get("nodeName")
    if isinstance(bound, str) and bound:
        return bound
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    names: set[str] = set()
    for term in required.get("nodeSelectorTerms") or []:
        for field in (term or {}).get("matchFields") or []:
            if field.get("key") == NODE_NAME_FIELD and field.get("operator") == "In":
                names.update(v for v in field.get("values") or [] if isinstance(v, str))
    return names.pop() if len(names) == 1 else None


def node_group(node: Json | None, label: str) -> str | None:
    """The node's group: its value of `label` (None: unknown node, or no such label)."""
    metadata = node.get("metadata") if isinstance(node, Mapping) else None
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    value = labels.get(label) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class GroupRecommendations:
    """The VPA's recommendation per node group, by the value of `label`."""

    label: str
    groups: Mapping[str, RecommendedPodResources]

    def encode(self) -> str:
        """The annotation's text: JSON, groups sorted, so an unchanged one reads the same."""
        groups = {name: self.groups[name].to_api() for name in sorted(self.groups)}
        return json.dumps({"label": self.label, "groups": groups}, sort_keys=True)

    @classmethod
    def decode(cls, text: str) -> GroupRecommendations:
        """NodeGroupError when the text is not what `encode` writes."""
        try:
            found = json.loads(text)
            label, groups = found["label"], found["groups"]
            if not isinstance(label, str) or not isinstance(groups, dict):
                raise TypeError("label must be a string, groups an object")
            decoded = {
                str(name): RecommendedPodResources.model_validate(value)
                for name, value in groups.items()
            }
        except (ValueError, KeyError, TypeError, ValidationError) as error:
            raise NodeGroupError(f"{GROUPS_ANNOTATION}: unreadable: {error}") from None
        return cls(label, decoded)


def group_recommendations(vpa: VerticalPodAutoscaler) -> GroupRecommendations | None:
    """The per-group figures the recommender left on the VPA; None when it has none, or
    when they cannot be read (the status recommendation then sizes every pod)."""
    text = (vpa.metadata.annotations or {}).get(GROUPS_ANNOTATION)
    if not text:
        return None
    try:
        return _decoded(text)
    except NodeGroupError:
        return None


# the updater asks once per pod and the webhook once per admission: one parse per text
_decoded = lru_cache(maxsize=256)(GroupRecommendations.decode)


def for_node(
    vpa: VerticalPodAutoscaler, node: Json | None
) -> tuple[VerticalPodAutoscaler, str | None]:
    """(the VPA as the pod on `node` is sized by, its group): the VPA with its node group's
    recommendation in place of the status one; the VPA itself, and None, when the node is
    unknown, in no group, or the VPA has no per-group figures."""
    found = group_recommendations(vpa)
    if found is None:
        return vpa, None
    group = node_group(node, found.label)
    chosen = found.groups.get(group) if group is not None else None
    if chosen is None or not chosen.container_recommendations:
        return vpa, None
    status = vpa.status or VerticalPodAutoscalerStatus()
    sized = vpa.model_copy(update={"status": status.model_copy(update={"recommendation": chosen})})
    return sized, f"{found.label}={group}"
