"""After a pass: the HPAs of VPAs that coordinate (`tailor.hpa_coordination`) rewritten
to the requests their pods now have.

Runs once per pass, after the resizes, over a fresh list of the pods: the target is
computed from the requests in the pods' spec, which the HPA divides usage by, not
from what the pass meant to write. Each rewrite is one merge
patch of the HPA (its metrics and its baseline annotation), explained in an Event on
the HPA and on the VPA and in the VPA's condition HorizontalAutoscalerCoordinated. A
VPA whose workload's template sets no request for the resource leaves that target
as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from tailor.api.vpa import VerticalPodAutoscaler
from tailor.cluster_port import ClusterError, UpdaterCluster
from tailor.events import NORMAL, ObjectRef, Recorder
from tailor.hpa import acts, scales_target
from tailor.hpa_coordination import COORDINATED_CONDITION, coordinates, hpa_rewrite
from tailor.matching import OwnerReferenceError, PodRef, controlling_vpa, pod_controller
from updater.report import vpa_ref
from updater.resources import Json

HPA_REWRITTEN = "HPATargetRewritten"
HPA_API_VERSION = "autoscaling/v2"


@dataclass(frozen=True)
class HpaSync:
    """What one coordinated HPA came to: `detail` says the rewrite, or why it failed."""

    namespace: str
    hpa: str
    vpa: str
    detail: str
    applied: bool


def _vpa_pods(
    vpa: VerticalPodAutoscaler,
    pods: Iterable[Json],
    replica_sets: Mapping[tuple[str, str], Json],
    jobs: Mapping[tuple[str, str], Json],
) -> list[Json]:
    """The VPA's running pods (the ones the HPA averages over)."""
    mine = []
    for pod in pods:
        metadata, status = pod.get("metadata") or {}, pod.get("status") or {}
        if metadata.get("namespace") != vpa.namespace or status.get("phase") != "Running":
            continue
        if metadata.get("deletionTimestamp"):
            continue
        try:
            reference = PodRef.of_pod(pod, pod_controller(pod, replica_sets, jobs))
        except (OwnerReferenceError, ValidationError):
            continue
        if controlling_vpa(reference, [vpa]) is vpa:
            mine.append(pod)
    return mine


def _template(cluster: UpdaterCluster, vpa: VerticalPodAutoscaler) -> Json | None:
    """The pod template spec of the VPA's target: the requests the HPA's owner set it for."""
    target = vpa.spec.target_ref
    try:
        found = cluster.controllers(target.kind).get((vpa.namespace, target.name))
    except KeyError:  # a kind we cannot list: no template, nothing rewritten
        return None
    spec = ((found or {}).get("spec") or {}).get("template", {}).get("spec")
    return spec if isinstance(spec, Mapping) else None


def _condition(message: str, now: datetime) -> dict[str, Any]:
    return {
        "type": COORDINATED_CONDITION,
        "status": "True",
        "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": message[:4000],
    }


def _with_condition(current: Json | None, condition: dict[str, Any]) -> dict[str, Any]:
    """The VPA's status with our condition in place of its last one; the rest kept."""
    others = [
        c
        for c in (current or {}).get("conditions") or []
        if isinstance(c, Mapping) and c.get("type") != COORDINATED_CONDITION
    ]
    return {**(current or {}), "conditions": [*others, condition]}


def _said_on(cluster: UpdaterCluster, vpa: VerticalPodAutoscaler, said: str, now: datetime) -> str:
    """Write the rewrite into the VPA's condition; "" or why it could not be written."""
    condition = _condition(said, now)
    try:  # over the VPA as listed; read again (get) only when another writer was first
        answer = cluster.write_vpa_status(
            vpa.to_api(), lambda current: _with_condition(current, condition)
        )
    except ClusterError as error:
        return f"; VPA condition not written: {error}"
    return "" if answer.accepted else f"; VPA condition not written: {answer.message}"


def sync_hpas(
    cluster: UpdaterCluster,
    vpas: Iterable[VerticalPodAutoscaler],
    hpas: Mapping[str, list[Json]],
    controllers: Mapping[str, Mapping[tuple[str, str], Json]],
    events: Recorder,
    now: datetime,
    dry_run: bool = False,
) -> list[HpaSync]:
    """Rewrite each coordinated HPA whose target no longer matches its pods' requests."""
    coordinating = [v for v in vpas if coordinates(v) and acts(v)]
    if not coordinating:
        return []
    pods = cluster.pods()
    replica_sets, jobs = controllers.get("ReplicaSet", {}), controllers.get("Job", {})
    done: list[HpaSync] = []
    for vpa in coordinating:
        mine = [h for h in hpas.get(vpa.namespace, []) if scales_target(h, vpa)]
        template = _template(cluster, vpa) if mine else None
        if template is None:
            continue
        running = _vpa_pods(vpa, pods, replica_sets, jobs)
        for hpa in mine:
            rewrite = hpa_rewrite(hpa, template, running)
            if rewrite is None:
                continue
            said = rewrite.explain()
            if dry_run:
                done.append(HpaSync(vpa.namespace, rewrite.name, vpa.name, said, True))
                continue
            answer = cluster.patch_hpa(vpa.namespace, rewrite.name, rewrite.patch())
            if not answer.accepted:
                why = f"not rewritten ({answer.status}): {answer.message}"
                done.append(HpaSync(vpa.namespace, rewrite.name, vpa.name, why, False))
                continue
            ref = ObjectRef.of(answer.obj or hpa, HPA_API_VERSION, "HorizontalPodAutoscaler")
            events.record(ref, NORMAL, HPA_REWRITTEN, said)
            events.record(vpa_ref(vpa), NORMAL, HPA_REWRITTEN, said)
            done.append(
                HpaSync(
                    vpa.namespace,
                    rewrite.name,
                    vpa.name,
                    said + _said_on(cluster, vpa, said, now),
                    True,
                )
            )
    return done
