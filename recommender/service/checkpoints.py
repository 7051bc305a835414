"""VerticalPodAutoscalerCheckpoints from the fitted upstream model, and their writes.

Upstream's recommender saves each (VPA, container)'s decaying histograms as a
checkpoint and resumes from them after a restart. We write the same objects from
the same model, so a cluster can move from our recommender back to upstream's
without losing its history. One checkpoint per container of a VPA whose pods
belong to exactly one workload (the model keeps one aggregate per workload). The
objects are built without I/O; `write_checkpoints` and `delete_orphaned_checkpoints` send them
through the cluster port.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from recommender.service.status import ServedVpa
from recommender.vpa.model import VpaModel
from tailor.api.checkpoint import (
    VerticalPodAutoscalerCheckpoint,
    VerticalPodAutoscalerCheckpointSpec,
    VerticalPodAutoscalerCheckpointStatus,
    checkpoint_name,
)
from tailor.api.meta import ObjectMeta, object_key
from tailor.cluster_port import Json, RecommenderCluster


def checkpoint_objects(
    entries: Iterable[ServedVpa], model: VpaModel, aggregates: pd.DataFrame, now: int
) -> list[dict[str, Any]]:
    """The checkpoint objects to write, as API JSON, one per (VPA, container) with history."""
    index = {
        (str(row.namespace), str(row.workload), str(row.container)): position
        for position, row in enumerate(aggregates.itertuples(index=False))
    }
    wanted: list[tuple[ServedVpa, str, int]] = []
    for entry in entries:
        if len(entry.workloads) != 1:
            continue
        [workload] = entry.workloads
        for container in sorted(entry.containers):
            position = index.get((entry.vpa.namespace, workload, container))
            if position is not None:
                wanted.append((entry, container, position))
    if not wanted:
        return []
    statuses = model.to_checkpoints(np.array([p for _, _, p in wanted], dtype=np.int64), now)
    objects = []
    for (entry, container, _), status in zip(wanted, statuses, strict=True):
        checkpoint = VerticalPodAutoscalerCheckpoint(
            metadata=ObjectMeta(
                name=checkpoint_name(entry.vpa.name, container), namespace=entry.vpa.namespace
            ),
            spec=VerticalPodAutoscalerCheckpointSpec(
                vpa_object_name=entry.vpa.name, container_name=container
            ),
            status=VerticalPodAutoscalerCheckpointStatus.model_validate(status),
        )
        objects.append(checkpoint.to_api())
    return objects


def orphaned_checkpoints(
    checkpoints: Iterable[Mapping[str, Any]], vpas: Iterable[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """(namespace, name) of every checkpoint whose VPA is gone.

    Upstream's recommender deletes these on its checkpoint GC, so a deleted VPA leaves
    no history behind. Any VPA of that name counts, whoever serves it and even when we
    cannot read it: only a checkpoint nobody could resume from goes.
    """
    alive = {object_key(v) for v in vpas}
    gone = []
    for checkpoint in checkpoints:
        namespace, name = object_key(checkpoint)
        owner = str((checkpoint.get("spec") or {}).get("vpaObjectName"))
        if (namespace, owner) not in alive:
            gone.append((namespace, name))
    return gone


def write_checkpoints(
    cluster: RecommenderCluster, checkpoints: Iterable[Mapping[str, Any]]
) -> tuple[int, list[str]]:
    """Write each checkpoint: how many the API server took, and why it refused the others."""
    written, refused = 0, []
    for checkpoint in checkpoints:
        answer = cluster.write_checkpoint(checkpoint)
        name = f"{checkpoint['metadata']['namespace']}/{checkpoint['metadata']['name']}"
        if answer.accepted:
            written += 1
        else:
            refused.append(f"checkpoint {name}: {answer.message}")
    return written, refused


def delete_orphaned_checkpoints(
    cluster: RecommenderCluster, vpas: Iterable[Json], in_scope: Callable[[str], bool]
) -> tuple[int, list[str]]:
    """Delete our checkpoints (namespaces `in_scope`) whose VPA is gone, as upstream's
    garbage collection does: how many went (or were gone already), and why others not."""
    ours = [c for c in cluster.checkpoints() if in_scope(object_key(c)[0])]
    deleted, refused = 0, []
    for namespace, name in orphaned_checkpoints(ours, vpas):
        answer = cluster.delete_checkpoint(namespace, name)
        if answer.accepted or answer.status == 404:
            deleted += 1
        else:
            refused.append(f"deleting checkpoint {namespace}/{name}: {answer.message}")
    return deleted, refused
