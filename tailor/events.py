"""Kubernetes Events from the recommender, the webhook and the updater: one recording rule.

Operators read `kubectl get events` and `kubectl describe pod|vpa` first, so every
component says what it did there, on the VPA and on the pod, with upstream's reasons
where upstream has one (`EvictedByVPA`, `EvictedPod`, `InPlaceResizedByVPA`). The
rules are client-go's event recorder's, written here because the Python client has no
recorder (it only has the Event API): a repeat of the same event (same object, type,
reason and message) patches the first one's count and lastTimestamp instead of
creating another, and each object has a token bucket (25 at once, then one every 5
minutes, client-go's spam filter) so a pod the updater reports every minute cannot
flood etcd. An Event that cannot be written is logged once per reason and never fails
the caller: Events explain, they do not decide.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

LOG = logging.getLogger("tailor.events")

Json = dict[str, Any]
NORMAL, WARNING = "Normal", "Warning"
BURST = 25  # events at once per object (client-go's spam filter)
REFILL = timedelta(minutes=5)  # one more every this long
AGGREGATE_WITHIN = timedelta(hours=1)  # the API server's default Event TTL
MESSAGE_LIMIT = 1024  # what the API keeps readable of a message
VPA_API_VERSION = "autoscaling.k8s.io/v1"


@dataclass(frozen=True)
class ObjectRef:
    """The object an Event is about (its involvedObject)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any], api_version: str, kind: str) -> ObjectRef:
        metadata = obj.get("metadata") or {}
        return cls(
            str(obj.get("apiVersion") or api_version),
            str(obj.get("kind") or kind),
            str(metadata.get("namespace") or ""),
            str(metadata.get("name") or ""),
            str(metadata.get("uid") or ""),
        )

    @classmethod
    def pod(cls, pod: Mapping[str, Any]) -> ObjectRef:
        return cls.of(pod, "v1", "Pod")

    @classmethod
    def vpa(cls, vpa: Mapping[str, Any]) -> ObjectRef:
        return cls.of(vpa, VPA_API_VERSION, "VerticalPodAutoscaler")

    def body(self) -> Json:
        found = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
        }
        return {**found, "uid": self.uid} if self.uid else found


class EventSink(Protocol):
    """Where Events go: the API server's core/v1 Events (or a test's list)."""

    def create_event(self, namespace: str, body: Json) -> None: ...

    def patch_event(self, namespace: str, name: str, body: Json) -> None: ...


class KubeEventSink:
    """core/v1 Events through the kubernetes client (RBAC: events create, patch).

    Each answer is read to its end: an unread raw response keeps its connection out of
    the client's pool, so the next Event would open (and handshake) a connection of its
    own, one per Event, which in a burst of pod creations costs the webhook more than
    the reviews."""

    def __init__(self, core: Any) -> None:
        self.core = core  # kubernetes.client.CoreV1Api

    def create_event(self, namespace: str, body: Json) -> None:
        self.core.create_namespaced_event(namespace, body, _preload_content=False).read()

    def patch_event(self, namespace: str, name: str, body: Json) -> None:
        self.core.patch_namespaced_event(name, namespace, body, _preload_content=False).read()


@dataclass
class _Seen:
    name: str
    count: int
    first: datetime


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Records Events for one component (`source.component`, e.g. "kube-tailor-updater")."""

    def __init__(
        self,
        sink: EventSink,
        component: str,
        instance: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.sink, self.component, self.clock = sink, component, clock
        self.instance = instance or socket.gethostname()
        self._tokens: dict[ObjectRef, tuple[float, datetime]] = {}
        self._seen: dict[tuple[ObjectRef, str, str, str], _Seen] = {}
        self._failed: set[str] = set()

    def _allowed(self, about: ObjectRef, now: datetime) -> bool:
        tokens, since = self._tokens.get(about, (float(BURST), now))
        tokens = min(float(BURST), tokens + (now - since) / REFILL)
        if tokens < 1.0:
            self._tokens[about] = (tokens, now)
            return False
        self._tokens[about] = (tokens - 1.0, now)
        return True

    def record(
        self, about: ObjectRef, kind: str, reason: str, message: str, times: int = 1
    ) -> bool:
        """Record an Event (`kind` Normal or Warning) that happened `times` times (its
        count); False when rate-limited or refused."""
        if not about.name or not about.namespace:
            return False  # nothing a reader could find it under (a pod not named yet)
        now = self.clock()
        if not self._allowed(about, now):
            return False
        message = message[:MESSAGE_LIMIT]
        key = (about, kind, reason, message)
        seen = self._seen.get(key)
        try:
            if seen is not None and now - seen.first < AGGREGATE_WITHIN:
                seen.count += times
                try:
                    patch = {"count": seen.count, "lastTimestamp": _stamp(now)}
                    self.sink.patch_event(about.namespace, seen.name, patch)
                    return True
                except Exception:
                    pass
            self._forget_before(now - AGGREGATE_WITHIN)
            name = f"{about.name}.{int(now.timestamp() * 1e9):x}"
            body = self._body(about, kind, reason, message, name, now, times)
            self.sink.create_event(about.namespace, body)
            self._seen[key] = _Seen(name, times, now)
        except Exception as error:
            if reason not in self._failed:
                self._failed.add(reason)
                LOG.warning("cannot record Event %s on %s: %s", reason, about.name, error)
            self._seen.pop(key, None)
            return False
        return True

    def _forget_before(self, moment: datetime) -> None:
        """Drop what repeats can no longer patch, so a long-running service stays small."""
        self._seen = {key: seen for key, seen in self._seen.items() if seen.first >= moment}
        self._tokens = {
            about: value
            for about, value in self._tokens.items()
            if value[0] < BURST - 1 or value[1] >= moment
        }

    def _body(
        self,
        about: ObjectRef,
        kind: str,
        reason: str,
        message: str,
        name: str,
        now: datetime,
        count: int,
    ) -> Json:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": about.namespace},
            "involvedObject": about.body(),
            "type": kind,
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
            "firstTimestamp": _stamp(now),
            "lastTimestamp": _stamp(now),
            "count": count,
        }


class NoEvents:
    """A recorder that records nothing (a dry run, or Events turned off)."""

    def record(self, about: ObjectRef, kind: str, reason: str, message: str) -> bool:
        return False


class Recorder(Protocol):
    def record(self, about: ObjectRef, kind: str, reason: str, message: str) -> bool: ...


class CountingRecorder(Protocol):
    def record(
        self, about: ObjectRef, kind: str, reason: str, message: str, times: int = 1
    ) -> bool: ...


class QueuedRecorder:
    """Records on a thread of its own: `record` only queues (a server's request path must
    not wait on the Event API); a full queue drops the Event, and counts it."""

    def __init__(self, recorder: CountingRecorder, size: int = 1000) -> None:
        self.recorder = recorder
        self.queue: queue.Queue[tuple[ObjectRef, str, str, str, int] | None] = queue.Queue(size)
        self.dropped = 0
        self._thread = threading.Thread(target=self._drain, name="tailor-events", daemon=True)
        self._thread.start()

    def record(
        self, about: ObjectRef, kind: str, reason: str, message: str, times: int = 1
    ) -> bool:
        try:
            self.queue.put_nowait((about, kind, reason, message, times))
        except queue.Full:
            self.dropped += 1
            return False
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (for up to `timeout` seconds), then end the thread.

        A process that exits while this thread is inside an API call aborts in the
        interpreter's shutdown (SIGABRT from the TLS layer's native code), and the
        Events still queued, the last a server gathered, would be lost.
        """
        deadline = time.monotonic() + timeout
        try:
            self.queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(max(0.0, deadline - time.monotonic()))

    def _drain(self) -> None:
        while (item := self.queue.get()) is not None:
            self.recorder.record(*item)
            self.queue.task_done()
        self.queue.task_done()
