"""Why a VPA that matches no pod may be misconfigured: upstream's ConfigUnsupported.

A VPA whose targetRef names a controller that is not there (a typo, a deleted
Deployment), or one that is not top-most (a Deployment's ReplicaSet), matches no pod
however long it waits. Upstream's recommender says so with the condition
ConfigUnsupported ("Cannot read targetRef", "The targetRef controller has a parent
..."), so `kubectl describe vpa` shows the mistake rather than a bare NoPodsMatched.
Only VPAs without pods are checked (a matched pod proves its target), and only
well-known kinds: a custom scalable kind is not read, and nothing is claimed of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tailor.api.meta import api_group
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.cluster_port import ClusterError, RecommenderCluster
from tailor.controller_kinds import CONTROLLER_KINDS, controller_group

# upstream's messages, word for word: tools match on them
CANNOT_READ = "Cannot read targetRef"
HAS_PARENT = (
    "The targetRef controller has a parent but it should point to a topmost well-known "
    "or scalable controller"
)


def _controlled(found: Mapping[str, Any]) -> bool:
    owners = (found.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(o, Mapping) and o.get("controller") is True for o in owners)


def target_problem(cluster: RecommenderCluster, vpa: VerticalPodAutoscaler) -> str | None:
    """Upstream's ConfigUnsupported message for the VPA's targetRef; None when it is a
    top-most well-known controller, or a kind we do not read.

    Raises ClusterError when the API server does not answer (or RBAC refuses the read).
    """
    ref = vpa.spec.target_ref
    if ref.kind not in CONTROLLER_KINDS:
        return None  # a custom kind
    if api_group(ref.api_version) not in (controller_group(ref.kind), None):
        return None  # a well-known name in another group
    found = cluster.controller(ref.kind, vpa.namespace, ref.name)
    if found is None:
        return f"{CANNOT_READ}. Reason: {ref.kind} {vpa.namespace}/{ref.name} not found"
    return HAS_PARENT if _controlled(found) else None


def target_problems(
    cluster: RecommenderCluster, vpas: list[VerticalPodAutoscaler]
) -> tuple[dict[tuple[str, str], str], list[str]]:
    """The problem of each VPA's target, by (namespace, name), and the reads that failed
    ("ns/vpa: why"): such a VPA gets no claim either way."""
    problems: dict[tuple[str, str], str] = {}
    failed: list[str] = []
    for vpa in vpas:
        try:
            problem = target_problem(cluster, vpa)
        except ClusterError as error:
            failed.append(f"{vpa.namespace}/{vpa.name}: {error}")
            continue
        if problem is not None:
            problems[(vpa.namespace, vpa.name)] = problem
    return problems, failed
