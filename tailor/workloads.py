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


# A CronJob's Job is `<cronjob>-<scheduled time in minutes since the epoch>` (8+ digits).
_SCHEDULED_TIME_SUFFIX = re.compile(r"^(?P<cronjob>.+)-[0-9]{8,}$")


def workload_from_owner(kind: str, name: str) -> str:
    """The workload a VPA would target: a ReplicaSet's Deployment, a Job's CronJob, else
    the owner itself.

    A ReplicaSet named like `<name>-<pod-template-hash>` is taken to belong to the
    Deployment `<name>`, and a Job named `<name>-<8 or more digits>` to the CronJob
    `<name>`, so every run of a CronJob shares one history and one schedule; a bare
    ReplicaSet or Job with such a suffix would be misread, which is the same guess
    `kubectl` users make from names alone.
    """
    pattern = {"ReplicaSet": _TEMPLATE_HASH_SUFFIX, "Job": _SCHEDULED_TIME_SUFFIX}.get(kind)
    match = pattern.match(name) if pattern is not None else None
    return match.group(1) if match else name


def pod_workload(pod: Mapping[str, Any]) -> str:
    """The workload of a pod given as API JSON: its controller's, else its own name.

    The Prometheus history reader takes the same owner: the one kube-state-metrics
    marks `owner_is_controller`, else the first (a pod has at most one controller).
    """
    metadata = pod.get("metadata") or {}
    owners = metadata.get("ownerReferences") or []
    chosen = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    if chosen is None:
        return str(metadata.get("name", ""))
    return workload_from_owner(str(chosen.get("kind", "")), str(chosen.get("name", "")))
