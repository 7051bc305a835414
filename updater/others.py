"""Resizes the updater did not make: someone else's, to be awaited, not overwritten (pure).

An operator (`kubectl patch --subresource resize`), another autoscaler or a script may
resize a pod in place. Writing the schedule's amounts over it at the next pass undoes
their change, and one the kubelet has Deferred would be replaced before it lands. The
API server records who wrote each field and through which subresource
(`metadata.managedFields`), which survives our restarts where a memory of our own
writes would not: a container's resources last set through `pods/resize` by a field
manager other than ours, and not also by ours, are another actor's resize. Such a pod
keeps its size while it differs from the target, and each pass says so, unless the
operator asks to overwrite (`--overwrite-others-resizes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tailor.pods import APP_FIELD, INIT_FIELD
from updater.plan import ResizePlan
from updater.resize_status import ResizeState, resize_status
from updater.resources import Json

RESIZE_SUBRESOURCE = "resize"


def _leaves(tree: Mapping[str, Any], path: tuple[str, ...]) -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for key, value in tree.items():
        if key == ".":
            continue
        if isinstance(value, Mapping) and any(k != "." for k in value):
            found |= _leaves(value, (*path, key))
        else:
            found.add((*path, key))
    return found


def _owned(fields: Mapping[str, Any]) -> set[tuple[str, ...]]:
    """The container resource fields (container key, requests|limits, resource) an
    entry's fieldsV1 owns."""
    spec = fields.get("f:spec") or {}
    owned: set[tuple[str, ...]] = set()
    for field in (APP_FIELD, INIT_FIELD):
        for key, value in (spec.get(f"f:{field}") or {}).items():
            resources = value.get("f:resources") if isinstance(value, Mapping) else None
            if key.startswith("k:") and isinstance(resources, Mapping):
                owned |= _leaves(resources, (key,))
    return owned


def others_resize(pod: Json, ours: str) -> tuple[str, ...]:
    """The field managers other than `ours` whose pods/resize writes own some container's
    resources that ours does not also own; empty when the pod's size is ours or its
    creator's."""
    mine: set[tuple[str, ...]] = set()
    theirs: dict[str, set[tuple[str, ...]]] = {}
    for entry in (pod.get("metadata") or {}).get("managedFields") or []:
        if entry.get("subresource") != RESIZE_SUBRESOURCE:
            continue
        owned = _owned(entry.get("fieldsV1") or {})
        manager = str(entry.get("manager") or "unknown")
        if manager == ours:
            mine |= owned
        else:
            theirs.setdefault(manager, set()).update(owned)
    return tuple(sorted(manager for manager, owned in theirs.items() if owned - mine))


def awaited_reason(managers: tuple[str, ...], pending: str | None) -> str:
    """What the report says of a pod whose size another actor set."""
    who = ", ".join(managers)
    state = f"; their resize is {pending}" if pending else ""
    return (
        f"resized by {who}, not by kube-tailor{state}: awaited, not overwritten "
        "(--overwrite-others-resizes replaces it)"
    )


def awaited(pod: Json, planned: object, ours: str) -> str | None:
    """Why a pod whose plan would change it keeps the size another actor gave it, or None."""
    if not isinstance(planned, ResizePlan) or not planned.changes:
        return None
    managers = others_resize(pod, ours)
    if not managers:
        return None
    status = resize_status(pod)
    return awaited_reason(managers, None if status.state is ResizeState.NONE else str(status.state))
