"""The webhook's reads of the cluster: VPAs and LimitRanges cached, ReplicaSets on demand.

An admission must answer in milliseconds, so VPAs and LimitRanges are listed in
the background every few seconds and read from memory; a failed refresh keeps
the last good lists. A Deployment's new ReplicaSet creates its pods at once, long
before the next refresh, so a ReplicaSet is fetched by name when first needed and
kept for a minute (its owner does not change).
"""

from __future__ import annotations

import logging
import threading
import time

import kubernetes.client

from admission.admit import Json
from admission.periodic import Periodic
from tailor.api.limitrange import LimitRange
from tailor.api.meta import by_namespace
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.kube import Cluster, ClusterError
from tailor.telemetry import ServiceTelemetry

LOG = logging.getLogger("tailor.admission")
REPLICA_SET_TTL_SECONDS = 60.0
_MAX_REPLICA_SETS = 10_000


class ClusterCache:
    """A `ClusterView` over one API client; `refresh()` reloads, `start()` keeps it fresh."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        refresh_seconds: float = 5.0,
        telemetry: ServiceTelemetry | None = None,
    ):
        self.cluster = Cluster(api_client)
        self.telemetry = telemetry  # each background refresh counts as a pass
        self._vpas: dict[str, list[VerticalPodAutoscaler]] = {}
        self._limit_ranges: dict[str, list[LimitRange]] = {}
        self._loaded_at: float | None = None
        self._vpa_crd_present = True
        self._replica_sets: dict[tuple[str, str], tuple[float, Json | None]] = {}
        self._lock = threading.Lock()
        self._refresher = Periodic(
            self._refresh_or_keep,
            refresh_seconds,
            name="tailor-cache",
            failure="refresh failed; keeping the last lists",
        )

    # -- ClusterView -------------------------------------------------------------------

    def vpas(self, namespace: str) -> list[VerticalPodAutoscaler]:
        return self._vpas.get(namespace, [])

    def limit_ranges(self, namespace: str) -> list[LimitRange]:
        return self._limit_ranges.get(namespace, [])

    def replica_set(self, namespace: str, name: str) -> Json | None:
        key, now = (namespace, name), time.monotonic()
        with self._lock:
            cached = self._replica_sets.get(key)
        if cached is not None and now - cached[0] < REPLICA_SET_TTL_SECONDS:
            return cached[1]
        found = self.cluster.replica_set(namespace, name)
        with self._lock:
            if len(self._replica_sets) >= _MAX_REPLICA_SETS:
                self._replica_sets.clear()
            self._replica_sets[key] = (now, found)
        return found

    # -- refreshing --------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether one refresh has succeeded (the /healthz answer)."""
        return self._loaded_at is not None

    def refresh(self) -> None:
        """List VPAs and LimitRanges of every namespace; ClusterError leaves the old lists."""
        vpa_items = self.cluster.vpas_if_installed()
        if vpa_items is None and self._vpa_crd_present:
            LOG.warning("the VPA CRD is not installed: no pod has a VPA")
        self._vpa_crd_present = vpa_items is not None
        range_items = self.cluster.limit_ranges()
        vpas = by_namespace(VerticalPodAutoscaler.valid_among(vpa_items or []))
        ranges = by_namespace(LimitRange.valid_among(range_items or []))
        self._vpas, self._limit_ranges = vpas, ranges  # swapped whole: no lock
        self._loaded_at = time.monotonic()

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
        self._refresher.start()
        return self

    def stop(self) -> None:
        self._refresher.stop()
