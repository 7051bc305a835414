"""Which workload a pod belongs to: the name history is grouped under and schedules are keyed by.

The history readers and the in-place updater must agree on it, or a schedule
planned for `web` never reaches the pods of Deployment `web`; the rule lives here once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A Deployment's ReplicaSet is `<deployment>-<pod-template-hash>`; the hash is a
# 32-bit number spelled in kube-controller-manager's safe alphabet (usually 8-10 chars).
_TEMPLATE_HASH_SUFFIX = re.compile(r"^(?P<deployment>.+)-[bcdfghjklmnpqrstvwxz2456789]{6,10}$")


def workload_from_owner(kind: str, name: str) -> str:
    """The workload a VPA would target: a ReplicaSet's Deployment, else the owner itself.

    A ReplicaSet named like `<name>-<pod-template-hash>` is taken to belong to the
    Deployment `<name>`; a bare ReplicaSet with such a suffix would be misread,
    which is the same guess `kubectl` users make from names alone.
    """
    if kind == "ReplicaSet":
        match = _TEMPLATE_HASH_SUFFIX.match(name)
        if match:
            return match.group("deployment")
    return name


def pod_workload(pod: Mapping[str, Any]) -> str:
    """The workload of a pod given as API JSON: its controller's, else its own name.

    The history readers take the first owner kube-state-metrics reports; a pod has
    at most one controller, which is that owner for everything a controller makes.
    """
    metadata = pod.get("metadata") or {}
    owners = metadata.get("ownerReferences") or []
    chosen = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    if chosen is None:
        return str(metadata.get("name", ""))
    return workload_from_owner(str(chosen.get("kind", "")), str(chosen.get("name", "")))
