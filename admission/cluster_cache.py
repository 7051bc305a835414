"""The webhook's reads of the cluster, all from memory: watched VPAs, LimitRanges, HPAs and
the owner links of ReplicaSets and Jobs.

An admission must answer in milliseconds, so everything a review reads is listed
once, then watched (admission.watch), as upstream's informers do: a VPA created a
moment before its pods is seen at once and a big cluster is not re-listed every few
seconds. A full re-list every `refresh_seconds` (5 minutes by default) is only a
safety net; a failed list keeps the last objects. The one API call left in a review
is the read of a ReplicaSet or Job the watch has not delivered yet (a Deployment's
new ReplicaSet creates its pods at once): it has a short request timeout and goes
through a circuit breaker, so a frozen API server costs a review at most one timeout
and, once the breaker is open, nothing. HPAs that cannot be watched (no RBAC for
them yet) are said in the log and read as none: the webhook then sizes pods as it
did before it knew of HPAs, rather than not at all. Nodes are watched too, as their
labels only: a DaemonSet pod is sized by its node's group (`tailor.node_groups`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Hashable
from typing import Generic, TypeVar

import kubernetes.client

from admission.admit import Json
from admission.breaker import BreakerOpen, CircuitBreaker
from admission.metrics import MetricsSink
from admission.owners import Index, hpa_spec, node_labels
from admission.periodic import Periodic
from admission.watch import MAX_RETRY_SECONDS, Store, Watcher
from tailor.api.limitrange import LimitRange
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.controller_kinds import CONTROLLER_KINDS
from tailor.kube import Cluster, ClusterError, Listing, WatchEvent
from tailor.telemetry import ServiceTelemetry

LOG = logging.getLogger("tailor.admission")
# a controller read by name that was not there: not asked again for this long
ABSENT_TTL_SECONDS = 10.0
# the read of a controller the watch has not delivered: well within a review's budget
API_TIMEOUT_SECONDS = 1.0
RESYNC_SECONDS = 300.0
OWNER_KINDS = ("ReplicaSet", "Job")
_HPA_CALL = ("autoscaling", "list_horizontal_pod_autoscaler_for_all_namespaces")
_NODE_CALL = ("core", "list_node")
_MAX_CACHED = 10_000
K = TypeVar("K")
WatchEvents = Generator[WatchEvent, None, None]
V = TypeVar("V")


class Expiring(Generic[K, V]):
    """Answers read on demand and kept for `ttl` seconds; past `size` keys all are dropped
    (a cluster-wide cache must not grow without bound)."""

    def __init__(self, ttl: float, size: int = _MAX_CACHED) -> None:
        self.ttl, self.size = ttl, size
        self._items: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def peek(self, key: K) -> V | None:
        """The answer kept for `key` if it is fresh, else None (nothing is loaded)."""
        with self._lock:
            cached = self._items.get(key)
        if cached is not None and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        return None

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
        metrics: MetricsSink | None = None,
        breaker: CircuitBreaker | None = None,
        record: Callable[[bool, float], None] | None = None,
    ):
        self.cluster = Cluster(api_client)
        self.telemetry = telemetry
        self.metrics = metrics
        self.breaker = breaker or CircuitBreaker()
        self.read_hpas = read_hpas  # False: --allow-hpa-conflicts, no HPA is ever read
        self._vpas = Store(VerticalPodAutoscaler, "VerticalPodAutoscalers")
        self._limit_ranges = Store(LimitRange, "LimitRanges")
        self._owners = {kind: Index(kind) for kind in OWNER_KINDS}
        self._hpas = Index("HorizontalPodAutoscalers", keep=hpa_spec)
        self._nodes = Index("Nodes", keep=node_labels)
        self._absent: Expiring[tuple[str, str, str], bool] = Expiring(ABSENT_TTL_SECONDS)
        self._vpa_crd_present = True
        if record is None and telemetry is not None:
            record = telemetry.record_pass
        self._record = record
        absent_retry = min(refresh_seconds, MAX_RETRY_SECONDS)  # the VPA CRD installed later
        watchers = [
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
        ]
        watched = [(self._owners[kind], CONTROLLER_KINDS[kind][:2]) for kind in OWNER_KINDS]
        if read_hpas:
            watched.append((self._hpas, _HPA_CALL))
        watched.append((self._nodes, _NODE_CALL))
        self._index_listings = [(index, self._listing(index, *call)) for index, call in watched]
        for index, (client, call) in watched:
            listing = self._listing(index, client, call)
            watchers.append(Watcher(index, listing, self._watch(index, client, call)))
        self._watchers = tuple(watchers)
        self._refresher = Periodic(
            self._refresh_or_keep,
            refresh_seconds,
            name="tailor-cache",
            failure="refresh failed; keeping the last lists",
        )

    def _listing(self, index: Index, client: str, call: str) -> Callable[[], Listing]:
        return lambda: self.cluster.listing_of(client, call, f"{index.kind} objects")

    def _watch(
        self, index: Index, client: str, call: str
    ) -> Callable[[str, int, kubernetes.watch.Watch], WatchEvents]:
        what = f"{index.kind} objects"
        return lambda version, seconds, stream: self.cluster.watch_of(
            client, call, what, version, seconds, stream
        )

    # -- ClusterView -------------------------------------------------------------------

    def vpas(self, namespace: str) -> list[VerticalPodAutoscaler]:
        return self._vpas.namespace(namespace)

    def limit_ranges(self, namespace: str) -> list[LimitRange]:
        return self._limit_ranges.namespace(namespace)

    def revision(self, namespace: str) -> Hashable:
        """Differs after any change a review of a pod in `namespace` could read: the
        namespace's VPAs, LimitRanges, owner links and HPAs, any Node's labels, a new list
        (`admission.verdicts`). Read before deciding; each store bumps it after a change."""
        return (
            self._vpas.revision(namespace),
            self._limit_ranges.revision(namespace),
            *(index.revision(namespace) for index in self._owners.values()),
            self._hpas.revision(namespace),
            self._nodes.revision(""),
        )

    def has_controller(self, kind: str, namespace: str, name: str) -> bool:
        """Whether `controller()` answers from memory (no API read)."""
        if kind not in self._owners or self._owners[kind].get(namespace, name) is not None:
            return True
        return self._absent.peek((kind, namespace, name)) is not None

    def controller(self, kind: str, namespace: str, name: str) -> Json | None:
        """The controller's owner links, from the watch; read by name (timeout, breaker) when
        the watch has not delivered it yet. ClusterError when that read fails."""
        index = self._owners.get(kind)
        found = index.get(namespace, name) if index is not None else None
        if found is not None or index is None:
            return found
        key = (kind, namespace, name)
        if self._absent.peek(key) is not None:
            return None
        found = self._read_controller(kind, namespace, name)
        if found is None:
            self._absent.get(key, lambda: True)
        else:
            index.learn(found)
        return found

    def _read_controller(self, kind: str, namespace: str, name: str) -> Json | None:
        def read() -> Json | None:
            return self.cluster.controller(kind, namespace, name, timeout=API_TIMEOUT_SECONDS)

        try:
            found = self.breaker.call(read, ClusterError)
        except BreakerOpen as error:
            self._count("breaker_open")
            raise ClusterError(f"{kind} {namespace}/{name} not read: {error}") from None
        except ClusterError:
            self._count("failed")
            raise
        self._count("ok")
        return found

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.api_read(outcome)

    def hpas(self, namespace: str) -> list[Json]:
        return self._hpas.namespace(namespace) if self.read_hpas else []

    def node(self, name: str) -> Json | None:
        """A node's name and labels, from the watch (None: not delivered, or unreadable)."""
        return self._nodes.get("", name)

    # -- refreshing --------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether both kinds have been listed once (the /healthz answer)."""
        return self._vpas.listed and self._limit_ranges.listed

    def refresh(self) -> None:
        """List every watched kind in every namespace; ClusterError leaves the old lists
        (HPAs that cannot be listed are read as none, and said).

        The watches then continue from these lists' resourceVersions.
        """
        vpas = self._vpa_listing()
        ranges = self.cluster.limit_range_listing()
        listed = []
        for index, listing in self._index_listings:
            try:
                listed.append((index, listing()))
            except ClusterError as error:
                if index is self._hpas:
                    LOG.warning("%s; sizing as if no HPA scaled any pod", error)
                elif index is self._nodes:
                    LOG.warning("%s; sizing DaemonSet pods without their node groups", error)
                else:
                    raise
        self._vpas.replace(vpas.items if vpas else [], vpas.resource_version if vpas else None)
        self._limit_ranges.replace(ranges.items, ranges.resource_version)
        for index, found in listed:
            index.replace(found.items, found.resource_version)
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
            if self._record is not None:
                self._record(succeeded, time.monotonic() - begun)

    def start(self) -> ClusterCache:
        """Watch every kind (from the last `refresh()`, else from a list of their own)."""
        for watcher in self._watchers:
            watcher.start()
        self._refresher.start()
        return self

    def stop(self) -> None:
        self._refresher.stop()
        for watcher in self._watchers:
            watcher.stop()
