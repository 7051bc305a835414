"""What the webhook says in Kubernetes Events: each pod it sized, on the VPA and the pod.

Recorded off the request path (`tailor.events.QueuedRecorder`): an admission answer
never waits on the Event API, and a burst of pod creations drops Events rather than
delaying pods. A pod created from a generateName has no name yet when it is sized, so
its Event is on the VPA only (it names the pod's generateName).

A worker process (`admission.workers`) does not write Events itself: each Event call of
the Python client costs milliseconds of CPU under the worker's GIL, beside its event
loop. It counts them (`RelayedEvents`) and sends them to the parent with its metrics.
The parent counts what every worker sent into one `RelayedEvents` too and writes it
every `RELAY_SECONDS`: identical Events of that while (a Deployment's pods sized alike,
by any worker) become one API call whose count says how many (`record_relayed`). Each
call costs the parent milliseconds of CPU; a burst at 100 pods/s of 20 Deployments
made 160 of them a second when each worker's quarter-second send was written as it came.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import kubernetes.client

from admission.review import AdmissionRequest, Verdict
from tailor.events import (
    NORMAL,
    CountingRecorder,
    EventRecorder,
    KubeEventSink,
    ObjectRef,
    QueuedRecorder,
    Recorder,
)

COMPONENT = "kube-tailor-admission"
SIZED = "PodSized"
# what a worker relays: an Event (object, type, reason, message) and how many times it happened
Relayed = tuple[ObjectRef, str, str, str, int]
# how long the parent gathers the workers' Events before writing them: at 2 s, a burst over 20
# Deployments cost the parent 10 calls a second, 0.3 ms of CPU per review at 100 pods/s
# (docs/results/webhook.md); the number of calls is bounded by each VPA's allowance anyway
RELAY_SECONDS = 10.0


def webhook_recorder(client: kubernetes.client.ApiClient) -> QueuedRecorder:
    """The webhook's recorder: through `client`, on a thread of its own."""
    core = kubernetes.client.CoreV1Api(client)
    return QueuedRecorder(EventRecorder(KubeEventSink(core), COMPONENT))


class RelayedEvents:
    """A `Recorder` that only counts: identical Events are one entry, with how many."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[ObjectRef, str, str, str]] = Counter()
        self._lock = threading.Lock()  # recorded on the loop's thread, taken on another

    def record(
        self, about: ObjectRef, kind: str, reason: str, message: str, times: int = 1
    ) -> bool:
        with self._lock:
            self._counts[(about, kind, reason, message)] += times
        return True

    def add(self, relayed: list[Relayed]) -> None:
        """What a worker relayed, counted in."""
        for about, kind, reason, message, times in relayed:
            self.record(about, kind, reason, message, times)

    def take(self) -> list[Relayed]:
        """What was recorded since the last take, each distinct Event once with its count."""
        with self._lock:
            taken, self._counts = self._counts, Counter()
        return [(*event, times) for event, times in taken.items()]


def record_relayed(recorder: CountingRecorder, relayed: list[Relayed]) -> None:
    """A worker's counted Events recorded by the parent (one API call each)."""
    for about, kind, reason, message, times in relayed:
        recorder.record(about, kind, reason, message, times)


def events_listener(recorder: Recorder) -> Callable[[AdmissionRequest, Verdict], None]:
    """A `make_app` listener recording an Event for every pod a VPA's recommendation sized."""

    def listen(review: AdmissionRequest, verdict: Verdict) -> None:
        vpa = verdict.sized_by
        if vpa is None or not isinstance(review.obj, dict):
            return
        metadata = review.obj.get("metadata") or {}
        name = str(metadata.get("name") or "")
        shown = name or f"{metadata.get('generateName') or ''}*"
        said = f"Pod {shown} sized by kube-tailor: {verdict.reason}"
        # from the model's fields: dumping the whole VPA (to_api) cost more than the review
        meta = vpa.metadata
        about = ObjectRef(vpa.api_version, vpa.kind, vpa.namespace, vpa.name, meta.uid or "")
        recorder.record(about, NORMAL, SIZED, said)
        if name:
            pod = ObjectRef("v1", "Pod", review.namespace, name)
            recorder.record(pod, NORMAL, SIZED, f"sized by kube-tailor: {verdict.reason}")

    return listen
