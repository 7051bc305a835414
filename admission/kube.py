"""The webhook's reads of the cluster: VPAs and LimitRanges cached, ReplicaSets on demand.

An admission must answer in milliseconds, so VPAs and LimitRanges are read from
memory: listed once, then watched (admission.watch), so a VPA created a moment
before its pods is seen at once and a big cluster is not re-listed every few
seconds. A full re-list every `refresh_seconds` (5 minutes by default) is only a
safety net. A failed list keeps the last objects. A Deployment's new ReplicaSet
creates its pods at once, so a ReplicaSet is fetched by name when first needed and
kept for a minute (its owner does not change). The HPAs of a namespace are listed
only when a pod with an acting VPA arrives there, and kept for `HPA_TTL_SECONDS`:
a few pods a second of one rollout cost one list. A list that fails (no RBAC for
HPAs yet) is said in the log and read as no HPA: the webhook then sizes pods as it
did before it knew of HPAs, rather than not at all.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

import kubernetes.client

from admission.admit import Json
from admission.periodic import Periodic
from admission.watch import MAX_RETRY_SECONDS, Store, Watcher
from tailor.api.limitrange import LimitRange
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.kube import Cluster, ClusterError, Listing
from tailor.telemetry import ServiceTelemetry

LOG = logging.getLogger("tailor.admission")
CONTROLLER_TTL_SECONDS = 60.0
HPA_TTL_SECONDS = 10.0
RESYNC_SECONDS = 300.0
_MAX_CACHED = 10_000
K = TypeVar("K")
V = TypeVar("V")


class Expiring(Generic[K, V]):
    """Answers read on demand and kept for `ttl` seconds; past `size` keys all are dropped
    (a cluster-wide cache must not grow without bound)."""

    def __init__(self, ttl: float, size: int = _MAX_CACHED) -> None:
        self.ttl, self.size = ttl, size
        self._items: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K, load: Callable[[], V]) -> V:
        now = time.monotonic()
        with self._lock:
            cached = self._items.get(key)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        found = load()
        with self._lock:
            if len(self._items) >= self.size:
                self._items.clear()
            self._items[key] = (now, found)
        return found


class ClusterCache:
    """A `ClusterView` over one API client; `refresh()` lists, `start()` keeps it current.

    After `start()` one thread per kind watches (changes arrive at once) and a full
    re-list runs every `refresh_seconds`. Each list and each watch call that the API
    server ends on schedule (every 30 s) records a pass on `telemetry`, so a cache
    that watches stays healthy however long the re-list interval; `tailor admission`
    sets the stale window to five of the shorter of the two, so a watch that is stuck
    is noticed within minutes.
    """

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        refresh_seconds: float = RESYNC_SECONDS,
        telemetry: ServiceTelemetry | None = None,
        read_hpas: bool = True,
    ):
        self.cluster = Cluster(api_client)
        self.telemetry = telemetry
        self.read_hpas = read_hpas  # False: --allow-hpa-conflicts, no HPA is ever read
        self._hpas: Expiring[str, list[Json]] = Expiring(HPA_TTL_SECONDS)
        self._vpas = Store(VerticalPodAutoscaler, "VerticalPodAutoscalers")
        self._limit_ranges = Store(LimitRange, "LimitRanges")
        self._vpa_crd_present = True
        self._controllers: Expiring[tuple[str, str, str], Json | None] = Expiring(
            CONTROLLER_TTL_SECONDS
        )
        record = telemetry.record_pass if telemetry is not None else None
        absent_retry = min(refresh_seconds, MAX_RETRY_SECONDS)  # the VPA CRD installed later
        self._watchers = (
            Watcher(
                self._vpas,
                self._vpa_listing,
                self.cluster.watch_vpas,
                record=record,
                absent_retry_seconds=absent_retry,
            ),
            Watcher(
                self._limit_ranges,
                self.cluster.limit_range_listing,
                self.cluster.watch_limit_ranges,
                record=record,
            ),
        )
        self._refresher = Periodic(
            self._refresh_or_keep,
            refresh_seconds,
            name="tailor-cache",
            failure="refresh failed; keeping the last lists",
        )

    # -- ClusterView -------------------------------------------------------------------

    def vpas(self, namespace: str) -> list[VerticalPodAutoscaler]:
        return self._vpas.namespace(namespace)

    def limit_ranges(self, namespace: str) -> list[LimitRange]:
        return self._limit_ranges.namespace(namespace)

    def controller(self, kind: str, namespace: str, name: str) -> Json | None:
        return self._controllers.get(
            (kind, namespace, name), lambda: self.cluster.controller(kind, namespace, name)
        )

    def hpas(self, namespace: str) -> list[Json]:
        if not self.read_hpas:
            return []
        return self._hpas.get(namespace, lambda: self._read_hpas(namespace))

    def _read_hpas(self, namespace: str) -> list[Json]:
        try:
            return self.cluster.hpas(namespace)
        except ClusterError as error:
            LOG.warning("%s; sizing as if no HPA scaled the pods of %s", error, namespace)
            return []

    # -- refreshing --------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether both kinds have been listed once (the /healthz answer)."""
        return self._vpas.listed and self._limit_ranges.listed

    def refresh(self) -> None:
        """List VPAs and LimitRanges of every namespace; ClusterError leaves the old lists.

        The watches then continue from these lists' resourceVersions.
        """
        vpas = self._vpa_listing()
        ranges = self.cluster.limit_range_listing()
        self._vpas.replace(vpas.items if vpas else [], vpas.resource_version if vpas else None)
        self._limit_ranges.replace(ranges.items, ranges.resource_version)
        for watcher in self._watchers:
            watcher.restart()

    def _vpa_listing(self) -> Listing | None:
        """The VPAs' list; None (no VPAs, said once) while the VPA CRD is not installed."""
        listing = self.cluster.vpa_listing()
        if listing is None and self._vpa_crd_present:
            LOG.warning("the VPA CRD is not installed: no pod has a VPA")
        self._vpa_crd_present = listing is not None
        return listing

    def _refresh_or_keep(self) -> None:
        begun, succeeded = time.monotonic(), False
        try:
            self.refresh()
            succeeded = True
        except ClusterError as error:  # expected (API server away): one line, no trace
            LOG.error("%s; keeping the last lists", error)
        finally:
            if self.telemetry is not None:
                self.telemetry.record_pass(succeeded, time.monotonic() - begun)

    def start(self) -> ClusterCache:
        """Watch both kinds (from the last `refresh()`, else from a list of their own)."""
        for watcher in self._watchers:
            watcher.start()
        self._refresher.start()
        return self

    def stop(self) -> None:
        self._refresher.stop()
        for watcher in self._watchers:
            watcher.stop()
