"""Deciding one admission: which VPA controls the pod, and the patch it gets.

The cluster is reached only through a `ClusterView` (VPAs, LimitRanges and HPAs of
a namespace, a ReplicaSet by name), so the decision is tested with plain objects.
What an HPA scales on (`tailor.hpa`) is left as the pod asks, as the updater leaves it.
Nothing here refuses a pod: a pod we cannot read is admitted as written with a
warning, and a failure of ours (an API server that does not answer, a bug) is
logged and the pod admitted as written, as upstream's failurePolicy Ignore would.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from pydantic import ValidationError

from admission.patch import (
    PodPatch,
    PodUnreadable,
    add_operation,
    json_pointer,
    pod_containers,
    pod_patch,
)
from admission.review import AdmissionRequest, Verdict
from tailor.api.limitrange import LimitRange
from tailor.api.meta import OwnerReference
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.api.vpa_validation import update_policy_default, vpa_problem
from tailor.cluster_port import ClusterError
from tailor.hpa import acts, hpa_conflicts
from tailor.matching import (
    OwnerReferenceError,
    PodRef,
    controller_reference,
    controlling_vpa,
    pod_controller,
)
from tailor.node_groups import GROUPS_ANNOTATION, for_node, pod_node_name
from tailor.pods import sized_container_names
from tailor.quantity import Quantity
from tailor.scope import EVERYWHERE, NamespaceScope

LOG = logging.getLogger("tailor.admission")
WARNING_PREFIX = "kube-tailor admission"

Json = Mapping[str, Any]


class ClusterView(Protocol):
    """What an admission reads of the cluster."""

    def vpas(self, namespace: str) -> list[VerticalPodAutoscaler]: ...

    def limit_ranges(self, namespace: str) -> list[LimitRange]: ...

    def controller(self, kind: str, namespace: str, name: str) -> Json | None: ...

    def has_controller(self, kind: str, namespace: str, name: str) -> bool:
        """Whether `controller()` answers from memory, without asking the API server."""
        ...

    def hpas(self, namespace: str) -> Sequence[Json]: ...

    def node(self, name: str) -> Json | None:
        """A node's metadata (name and labels at least); None when not known."""
        ...


def _with_namespace(pod: Json, namespace: str) -> dict[str, Any]:
    """A pod being created may carry no namespace yet; the request's is the one it gets."""
    metadata = pod.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise PodUnreadable("metadata is not an object")
    metadata = dict(metadata or {})
    metadata["namespace"] = metadata.get("namespace") or namespace
    return {**pod, "metadata": metadata}


def _patch_for(
    pod: Json, namespace: str, view: ClusterView, max_cpu_boost: Quantity | None = None
) -> PodPatch:
    metadata = pod.get("metadata") or {}
    try:
        owners = [OwnerReference.model_validate(o) for o in metadata.get("ownerReferences") or []]
        owner = controller_reference(owners)
    except (OwnerReferenceError, ValidationError, TypeError) as error:
        raise PodUnreadable(f"owner references: {error}") from None
    # a ReplicaSet's Deployment or a Job's CronJob is what a VPA targets
    known: dict[str, dict[tuple[str, str], Json]] = {"ReplicaSet": {}, "Job": {}}
    if owner is not None and owner.kind in known:
        found = view.controller(owner.kind, namespace, owner.name)
        if found is not None:
            known[owner.kind][(namespace, owner.name)] = found
    try:
        controller = pod_controller(pod, known["ReplicaSet"], known["Job"])
    except (OwnerReferenceError, ValidationError) as error:
        controller = None  # the owner's own owners are unreadable: the chain stops there
        kind, name = (owner.kind, owner.name) if owner else ("", "")
        LOG.warning("%s: %s %s: %s", namespace, kind, name, error)
    vpa = _controlling_vpa(PodRef.of_pod(pod, controller), view.vpas(namespace))
    if vpa is None:
        return pod_patch(pod, None)
    hpas = view.hpas(namespace) if acts(vpa) else []  # a VPA in mode Off fights nothing
    pod_containers(pod)  # a pod that cannot be read is admitted as written, and says so
    conflicts = hpa_conflicts(vpa, hpas, sized_container_names(pod))
    sized, group = _by_node_group(pod, vpa, view)
    patch = pod_patch(pod, sized, view.limit_ranges(namespace), conflicts, max_cpu_boost)
    if group is not None and patch.operations:
        patch = replace(patch, reason=f"{patch.reason} (node group {group})")
    return replace(patch, vpa=vpa)


def _controlling_vpa(
    reference: PodRef, vpas: Sequence[VerticalPodAutoscaler]
) -> VerticalPodAutoscaler | None:
    """As upstream's webhook: VPAs in mode Off are dropped before the oldest match wins;
    one is still found when nothing else matches, for its startup boost and the reason.

    Only the VPAs aimed at the pod's controller by kind and name are matched (no other
    can target it): a namespace's VPAs are otherwise each matched, twice, per pod."""
    target = reference.controller
    if target is None:
        return None
    aimed = [
        vpa
        for vpa in vpas
        if vpa.spec.target_ref.name == target.name and vpa.spec.target_ref.kind == target.kind
    ]
    return controlling_vpa(reference, [v for v in aimed if acts(v)]) or controlling_vpa(
        reference, aimed
    )


def _by_node_group(
    pod: Json, vpa: VerticalPodAutoscaler, view: ClusterView
) -> tuple[VerticalPodAutoscaler, str | None]:
    """The VPA with the recommendation of the pod's node group (`tailor.node_groups`):
    the node named by spec.nodeName, or, for a DaemonSet's pod, by its node affinity."""
    if GROUPS_ANNOTATION not in (vpa.metadata.annotations or {}):
        return vpa, None
    name = pod_node_name(pod)
    return for_node(vpa, view.node(name) if name is not None else None)


def needs_api(request: AdmissionRequest, view: ClusterView) -> bool:
    """Whether deciding `request` may wait on the API server: a pod whose ReplicaSet or Job
    the view does not hold yet. Everything else is decided from memory at once."""
    if not request.is_pod_create() or not isinstance(request.obj, Mapping):
        return False
    metadata = request.obj.get("metadata")
    owners = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
    if not isinstance(owners, list):
        return False
    for owner in owners:
        if isinstance(owner, Mapping) and owner.get("controller") is True:
            kind, name = owner.get("kind"), owner.get("name")
            if isinstance(kind, str) and isinstance(name, str):
                return not view.has_controller(kind, request.namespace, name)
    return False


def admit(
    request: AdmissionRequest,
    view: ClusterView,
    scope: NamespaceScope = EVERYWHERE,
    max_cpu_boost: Quantity | None = None,
) -> Verdict:
    """The verdict on one admission request: a pod is always allowed, patched where a VPA
    says so; a VPA is refused where upstream's rules refuse it (`vpa_verdict`)."""
    if request.is_vpa_write():
        return vpa_verdict(request)
    if not request.is_pod_create():
        return Verdict(reason=f"not a pod CREATE ({request.operation} {request.resource})")
    if not scope.includes(request.namespace):
        return Verdict(reason=f"namespace {request.namespace} is outside {scope.describe()}")
    if not isinstance(request.obj, Mapping):
        return Verdict(
            warnings=(f"{WARNING_PREFIX}: cannot read the pod: request.object is not an object",),
            reason="unreadable pod",
        )
    try:
        pod = _with_namespace(request.obj, request.namespace)
        patch = _patch_for(pod, request.namespace, view, max_cpu_boost)
    except PodUnreadable as error:
        return Verdict(
            warnings=(f"{WARNING_PREFIX}: cannot read the pod, admitted as written: {error}",),
            reason=f"unreadable pod: {error}",
        )
    except ClusterError as error:
        LOG.error("pod in %s admitted as written: %s", request.namespace, error)
        return Verdict(
            warnings=(f"{WARNING_PREFIX}: cluster unreadable, pod admitted as written",),
            reason=f"cluster unreadable: {error}",
            lasting=False,
        )
    except Exception:
        LOG.exception("admission of a pod in %s failed; admitted as written", request.namespace)
        return Verdict(
            warnings=(f"{WARNING_PREFIX}: internal error, pod admitted as written",),
            reason="internal error",
            lasting=False,
        )
    sized_by = patch.vpa if patch.operations else None
    return Verdict(operations=patch.operations, reason=patch.reason, sized_by=sized_by)


def vpa_verdict(request: AdmissionRequest) -> Verdict:
    """Upstream's checks on a VPA being written (`tailor.api.vpa_validation`): refused with
    its message, else allowed with upstream's default updatePolicy when it has none. In
    every namespace: a VPA is an API object, whichever namespaces the pods are sized in."""
    vpa = request.obj
    if not isinstance(vpa, Mapping):
        return Verdict(reason="unreadable VPA: left to the API server's schema check")
    problem = vpa_problem(vpa, is_create=request.operation == "CREATE")
    metadata = vpa.get("metadata")
    name = str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""
    if problem:
        return Verdict(denied=problem, reason=f"VPA {name} refused: {problem}")
    default = update_policy_default(vpa)
    if default is None:
        return Verdict(reason=f"VPA {name} accepted")
    return Verdict(
        operations=(add_operation(json_pointer("spec", "updatePolicy"), default),),
        reason=f"VPA {name}: updatePolicy defaulted to updateMode {default['updateMode']}",
    )
