"""What the webhook says in Kubernetes Events: each pod it sized, on the VPA and the pod.

Recorded off the request path (`tailor.events.QueuedRecorder`): an admission answer
never waits on the Event API, and a burst of pod creations drops Events rather than
delaying pods. A pod created from a generateName has no name yet when it is sized, so
its Event is on the VPA only (it names the pod's generateName).
"""

from __future__ import annotations

from collections.abc import Callable

import kubernetes.client

from admission.review import AdmissionRequest, Verdict
from tailor.events import (
    NORMAL,
    EventRecorder,
    KubeEventSink,
    ObjectRef,
    QueuedRecorder,
    Recorder,
)

COMPONENT = "kube-tailor-admission"
SIZED = "PodSized"


def webhook_recorder(client: kubernetes.client.ApiClient) -> QueuedRecorder:
    """The webhook's recorder: through `client`, on a thread of its own."""
    core = kubernetes.client.CoreV1Api(client)
    return QueuedRecorder(EventRecorder(KubeEventSink(core), COMPONENT))


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
        recorder.record(ObjectRef.vpa(vpa.to_api()), NORMAL, SIZED, said)
        if name:
            pod = ObjectRef("v1", "Pod", review.namespace, name)
            recorder.record(pod, NORMAL, SIZED, f"sized by kube-tailor: {verdict.reason}")

    return listen
