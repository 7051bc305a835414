"""What the components read from and write to the cluster, as types with no client behind.

The edge (`tailor.kube`) speaks to the API server; the updater, the recommender service
and the admission webhook are written against these names, so their logic is imported,
run and tested without the Kubernetes client (see docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

Json = Mapping[str, Any]


class ClusterError(RuntimeError):
    """The API server could not be reached or refused a read the updater needs."""


class ResourceVersionGone(ClusterError):
    """410: a watch asked for changes older than the API server keeps; list again."""


@dataclass(frozen=True)
class Listing:
    """A list's items and its resourceVersion, where a watch of the same kind continues."""

    items: list[Json]
    resource_version: str


class WatchEvent(NamedTuple):
    """One line of a watch: ADDED, MODIFIED, DELETED or BOOKMARK, and the object as JSON."""

    type: str
    obj: Json


@dataclass(frozen=True)
class Answer:
    """What the API server said to a write: accepted (with the new object) or why not."""

    accepted: bool
    status: int
    message: str = ""
    obj: Json | None = None
