"""The cluster port: what the components read from and write to the cluster, no client behind.

`tailor.kube.Cluster` is the one implementation that speaks to the API server. The
updater's pass takes an `UpdaterCluster`, the recommender service's pass a
`RecommenderCluster` (as the webhook's review takes its `admission.admit.ClusterView`),
so their pass logic is imported, run and tested without the Kubernetes client: the
tests drive both passes through an in-memory cluster as well as through a real API
server. The import contracts (pyproject.toml) keep the updater and the recommender
from importing `tailor.kube`; the CLI wires the real one in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

Json = Mapping[str, Any]
FIELD_MANAGER = "kube-tailor"  # the field manager of every write of ours


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


class ClusterReads(Protocol):
    """The reads both the updater and the recommender service make, once per pass."""

    def pods(self) -> list[Json]:
        """Every pod of the cluster."""
        ...

    def vpas(self) -> list[Json]:
        """Every VerticalPodAutoscaler (ClusterError when the CRD is not installed)."""
        ...

    def hpas(self, namespace: str | None = None) -> list[Json]:
        """The HorizontalPodAutoscalers of one namespace (None: all)."""
        ...

    def controllers(self, kind: str) -> dict[tuple[str, str], Json]:
        """Every object of a controller kind by (namespace, name)."""
        ...


class UpdaterCluster(ClusterReads, Protocol):
    """What the updater's pass (`updater.follow.follow_once`) reads and writes."""

    def nodes(self) -> dict[str, Json]:
        """Every node by name (allocatable room for the fit checks)."""
        ...

    def limit_ranges(self) -> list[Json]:
        """Every LimitRange of the cluster."""
        ...

    def resize(self, pod: Json, patch: Json, dry_run: bool = False) -> Answer:
        """Resize a pod in place (pods/resize, a strategic merge patch of its containers)."""
        ...

    def evict(self, pod: Json, dry_run: bool = False) -> Answer:
        """Evict a pod (pods/eviction: a PodDisruptionBudget may refuse it, 429)."""
        ...

    def annotate(self, pod: Json, annotations: Mapping[str, str]) -> Answer:
        """Merge `annotations` into the pod's metadata (when it was last resized)."""
        ...

    def patch_hpa(self, namespace: str, name: str, patch: Json) -> Answer:
        """A JSON merge patch of an autoscaling/v2 HPA (its target, when coordinated)."""
        ...

    def write_vpa_status(
        self, vpa: Json, status_over: Callable[[Json | None], Json], attempts: int = 8
    ) -> Answer:
        """Write `status_over(current status)` over the VPA's status (a coordinated HPA's
        condition), again over a fresh read when another writer was first (409)."""
        ...


class RecommenderCluster(ClusterReads, Protocol):
    """What the recommender service's pass (`recommender.service.passes`) reads and writes."""

    def nodes(self) -> dict[str, Json]:
        """Every node by name (a DaemonSet's pods are grouped by a node label)."""
        ...

    def annotate_vpa(
        self, namespace: str, name: str, annotations: Mapping[str, str | None]
    ) -> Answer:
        """Merge `annotations` into the VPA's metadata (None deletes one): the per-node-group
        figures the API has no field for."""
        ...

    def controller(self, kind: str, namespace: str, name: str) -> Json | None:
        """One controller by name; None when it is not there (a VPA's targetRef)."""
        ...

    def write_vpa_status(
        self, vpa: Json, status_over: Callable[[Json | None], Json], attempts: int = 8
    ) -> Answer:
        """Write `status_over(current status)` over the VPA's status as last read, again
        over a fresh read when another writer was first (409)."""
        ...

    def checkpoints(self) -> list[Json]:
        """Every VerticalPodAutoscalerCheckpoint (none without the CRD)."""
        ...

    def write_checkpoint(self, checkpoint: Json) -> Answer:
        """Create a checkpoint, or replace its spec and status."""
        ...

    def delete_checkpoint(self, namespace: str, name: str) -> Answer:
        """Delete a checkpoint (404 when it is gone already)."""
        ...

    def write_config_map(self, namespace: str, name: str, data: Mapping[str, str | None]) -> Answer:
        """Create a ConfigMap or merge its keys (None deletes a key): the published schedule."""
        ...
