"""What the updater says in Kubernetes Events, on the pod and on its VPA.

Each outcome that changed something, or that an operator has to act on, is one Event
on the pod and one on the VPA that controls it (with `--vpa`); the reasons are
upstream's where upstream records one (`InPlaceResizedByVPA`, `EvictedByVPA` on the
pod, `EvictedPod` on the VPA), ours otherwise. The recording rule (aggregation,
rate limit) is `tailor.events`'.
"""

from __future__ import annotations

from dataclasses import dataclass

from tailor.api.vpa import VerticalPodAutoscaler
from tailor.events import (
    NORMAL,
    VPA_API_VERSION,
    WARNING,
    EventRecorder,
    KubeEventSink,
    ObjectRef,
    Recorder,
)
from updater.decide import Action
from updater.resize_status import ResizeState, resize_status
from updater.resources import Json

RESIZED = "InPlaceResizedByVPA"  # upstream's, on the pod
EVICTED = "EvictedByVPA"  # upstream's, on the pod
DEFERRED = "ResizeDeferred"
INFEASIBLE = "ResizeInfeasible"
EVICTION_REFUSED = "EvictionRefused"  # the API server's 429: a PodDisruptionBudget
REPLACEMENT_WOULD_NOT_FIT = "ReplacementWouldNotFit"
OTHERS_RESIZE = "ResizeByOthersAwaited"


@dataclass(frozen=True)
class Said:
    kind: str
    on_vpa: str  # the VPA's reason


SAID = {
    RESIZED: Said(NORMAL, "InPlaceResizedPod"),
    EVICTED: Said(NORMAL, "EvictedPod"),  # upstream's, on the VPA
    DEFERRED: Said(WARNING, DEFERRED),
    INFEASIBLE: Said(WARNING, INFEASIBLE),
    EVICTION_REFUSED: Said(WARNING, EVICTION_REFUSED),
    REPLACEMENT_WOULD_NOT_FIT: Said(WARNING, REPLACEMENT_WOULD_NOT_FIT),
    OTHERS_RESIZE: Said(NORMAL, OTHERS_RESIZE),
}

_POD_MESSAGES = {
    RESIZED: "Pod was resized in place by kube-tailor: {detail}",
    EVICTED: "Pod was evicted by kube-tailor to apply its new size: {detail}",
}
_VPA_MESSAGES = {
    RESIZED: "kube-tailor resized Pod {pod} in place: {detail}",
    EVICTED: "kube-tailor evicted Pod {pod} to apply its new size: {detail}",
}


COMPONENT = "kube-tailor-updater"


def updater_events(core: object) -> EventRecorder:
    """The updater's recorder, writing through a CoreV1Api."""
    return EventRecorder(KubeEventSink(core), COMPONENT)


def vpa_ref(vpa: VerticalPodAutoscaler) -> ObjectRef:
    uid = vpa.metadata.uid or ""
    return ObjectRef(VPA_API_VERSION, "VerticalPodAutoscaler", vpa.namespace, vpa.name, uid)


def record_outcome(
    recorder: Recorder,
    pod: Json,
    vpa: VerticalPodAutoscaler | None,
    reason: str,
    detail: str,
) -> None:
    """The Events of one pod's outcome (`reason` one of this module's; "" records none)."""
    said = SAID.get(reason)
    if said is None:
        return
    ref = ObjectRef.pod(pod)
    pod_text = _POD_MESSAGES.get(reason, "{detail}").format(detail=detail)
    recorder.record(ref, said.kind, reason, pod_text)
    if vpa is not None:
        text = _VPA_MESSAGES.get(reason, "Pod {pod}: {detail}").format(pod=ref.name, detail=detail)
        recorder.record(vpa_ref(vpa), said.kind, said.on_vpa, text)


def pending_event(pod: Json, action: Action) -> str:
    """The Event of a pod left waiting on a resize the kubelet put off or refused, or ""."""
    if action in (Action.RESIZE, Action.EVICT):
        return ""
    state = resize_status(pod).state
    return {ResizeState.DEFERRED: DEFERRED, ResizeState.INFEASIBLE: INFEASIBLE}.get(state, "")


def eviction_refused(status: int, event: str) -> str:
    """A 429 is the API server applying a PodDisruptionBudget."""
    return EVICTION_REFUSED if status == 429 else event
