"""Which HorizontalPodAutoscalers fight a VPA over the same resource (pure).

An HPA scaling on a pod's cpu or memory, relative to requests, and a VPA changing
those requests chase each other: the VPA raises requests, utilization drops, the
HPA removes replicas, usage per pod rises, and so on. Upstream only documents
"don't"; the recommender reports the conflict as a VPA condition and the updater
leaves the contested resources alone, so both need this one rule.

An HPA (autoscaling/v2, as the API returns it) conflicts with a VPA that acts
(any updateMode but `Off`) when its scaleTargetRef is the VPA's targetRef (kind,
name, and API group when both give an apiVersion) and it scales on a `Resource`
metric, or a `ContainerResource` metric of a container, whose resource (cpu or
memory) the VPA controls there (containerPolicies: `mode: Off` and
`controlledResources` exclude). An HPA without metrics scales on 80 % CPU
utilization: autoscaling/v2's defaulting (pkg/apis/autoscaling/v2/defaults.go).
Malformed HPAs are skipped: they can fight nothing the API server would accept.
A VPA annotated `kube-tailor.io/coordinate-hpa: "true"` is coordinated instead
(`tailor.hpa_coordination`): no conflict, its HPAs' targets follow its requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tailor.api.crd import WILDCARD_CONTAINER
from tailor.api.meta import RESOURCE_CPU, RESOURCE_MEMORY, api_group
from tailor.api.vpa import ContainerResourcePolicy, UpdateMode, VerticalPodAutoscaler
from tailor.hpa_coordination import coordinates
from tailor.scope import NamespaceScope

Json = Mapping[str, Any]
CONTESTED = (RESOURCE_CPU, RESOURCE_MEMORY)
HPA_CONFLICT_CONDITION = "HorizontalAutoscalerConflict"
RESOURCE_METRIC = "Resource"
CONTAINER_RESOURCE_METRIC = "ContainerResource"


@dataclass(frozen=True)
class HpaConflict:
    """One HPA metric on a resource the VPA controls; `container` None: every container."""

    hpa: str
    metric: str  # Resource or ContainerResource
    resource: str
    container: str | None = None
    defaulted: bool = False  # the HPA names no metrics: autoscaling/v2's default

    @property
    def reason(self) -> str:
        where = f"container {self.container}'s " if self.container else ""
        text = f"HPA {self.hpa} scales on {where}{self.resource} ({self.metric} metric"
        if self.defaulted:
            text += ", autoscaling/v2's default 80 % CPU utilization: no spec.metrics"
        return text + ")"

    def covers(self, container: str) -> bool:
        return self.container is None or self.container == container


@dataclass(frozen=True)
class _Metric:
    kind: str
    resource: str
    container: str | None
    defaulted: bool = False


_DEFAULT_METRICS = (_Metric(RESOURCE_METRIC, RESOURCE_CPU, None, defaulted=True),)


def scales_target(hpa: object, vpa: VerticalPodAutoscaler) -> bool:
    """Whether the HPA (API JSON) scales the VPA's target, in the VPA's namespace."""
    if not isinstance(hpa, Mapping):
        return False
    metadata, spec = hpa.get("metadata"), hpa.get("spec")
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        return False
    scale_target = spec.get("scaleTargetRef")
    if metadata.get("namespace") not in (None, "", vpa.namespace):
        return False
    return isinstance(scale_target, Mapping) and _targets_same(scale_target, vpa)


def _targets_same(scale_target: Json, vpa: VerticalPodAutoscaler) -> bool:
    """Whether the HPA scales what the VPA targets; groups compared when both are given."""
    target = vpa.spec.target_ref
    if scale_target.get("kind") != target.kind or scale_target.get("name") != target.name:
        return False
    hpa_group, vpa_group = api_group(scale_target.get("apiVersion")), api_group(target.api_version)
    return hpa_group is None or vpa_group is None or hpa_group == vpa_group


def _metric(entry: object) -> _Metric | None:
    """A cpu or memory metric of one spec.metrics entry; None for any other (or a bad one)."""
    if not isinstance(entry, Mapping):
        return None
    kind = entry.get("type")
    if kind == RESOURCE_METRIC:
        source, container = entry.get("resource"), None
    elif kind == CONTAINER_RESOURCE_METRIC:
        source = entry.get("containerResource")
        container = source.get("container") if isinstance(source, Mapping) else None
        if not isinstance(container, str) or not container:
            return None
    else:
        return None
    resource = source.get("name") if isinstance(source, Mapping) else None
    return _Metric(kind, resource, container) if resource in CONTESTED else None


def _hpa_metrics(hpa: object, vpa: VerticalPodAutoscaler) -> tuple[str, tuple[_Metric, ...]]:
    """(name, contested metrics) of an HPA scaling the VPA's target; ("", ()) otherwise."""
    if not isinstance(hpa, Mapping):
        return "", ()
    metadata, spec = hpa.get("metadata"), hpa.get("spec")
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        return "", ()
    name, namespace = metadata.get("name"), metadata.get("namespace")
    scale_target = spec.get("scaleTargetRef")
    if not isinstance(name, str) or not isinstance(scale_target, Mapping):
        return "", ()
    if namespace not in (None, "", vpa.namespace) or not _targets_same(scale_target, vpa):
        return "", ()
    metrics = spec.get("metrics")
    if metrics is None or metrics == []:
        return name, _DEFAULT_METRICS
    if not isinstance(metrics, list):
        return "", ()
    return name, tuple(m for m in map(_metric, metrics) if m is not None)


def _controls(policy: ContainerResourcePolicy | None, resource: str) -> bool:
    if policy is None:
        return True  # no policy: the VPA controls cpu and memory
    return not policy.is_off and resource in policy.effective_controlled_resources()


def vpa_controls(
    vpa: VerticalPodAutoscaler, resource: str, containers: Iterable[str] | None = None
) -> bool:
    """Whether the VPA controls `resource` of any of `containers` (None: of any container
    its policies could apply to, the "*" default included)."""
    if containers is not None:
        return any(_controls(vpa.container_policy(c), resource) for c in containers)
    policies = vpa.spec.resource_policy.container_policies if vpa.spec.resource_policy else None
    named = list(policies or [])
    wildcard = vpa.container_policy(WILDCARD_CONTAINER)
    return _controls(wildcard, resource) or any(_controls(p, resource) for p in named)


def acts(vpa: VerticalPodAutoscaler) -> bool:
    """A VPA in mode Off only recommends: it changes no request and fights nothing."""
    return vpa.effective_update_mode() is not UpdateMode.OFF


def hpa_conflicts(
    vpa: VerticalPodAutoscaler,
    hpas: Iterable[object],
    containers: Iterable[str] | None = None,
) -> list[HpaConflict]:
    """The HPA metrics that fight this VPA, by HPA name (then metric order), so a condition's
    message does not change with the listing order.

    `containers` are the names of the VPA's pods' containers where known: a Resource metric
    then conflicts only if the VPA controls that resource in one of them, a ContainerResource
    metric only for one of them. HPAs of other namespaces or targets are ignored. A VPA
    that coordinates with its HPAs (`tailor.hpa_coordination`) fights none of them: its
    updater rewrites their targets as it resizes.
    """
    if not acts(vpa) or coordinates(vpa):
        return []
    names = None if containers is None else sorted(set(containers))
    conflicts: list[HpaConflict] = []
    found = sorted((_hpa_metrics(hpa, vpa) for hpa in hpas), key=lambda named: named[0])
    for name, metrics in found:
        for metric in metrics:
            if metric.container is not None:
                if names is not None and metric.container not in names:
                    continue
                scope: list[str] | None = [metric.container]
            else:
                scope = names
            if vpa_controls(vpa, metric.resource, scope):
                conflict = HpaConflict(
                    name, metric.kind, metric.resource, metric.container, metric.defaulted
                )
                if conflict not in conflicts:
                    conflicts.append(conflict)
    return conflicts


def conflict_message(conflicts: Iterable[HpaConflict]) -> str:
    """The condition message: each conflict's reason, joined."""
    return "; ".join(c.reason for c in conflicts)


def contested(conflicts: Iterable[HpaConflict], container: str) -> frozenset[str]:
    """The resources of `container` an HPA scales on: the updater leaves them alone."""
    return frozenset(c.resource for c in conflicts if c.covers(container))


def hpas_by_namespace(hpas: Iterable[object], scope: NamespaceScope) -> dict[str, list[Json]]:
    """The listed HPAs in the services' namespace scope, by namespace (malformed ones dropped)."""
    grouped: dict[str, list[Json]] = {}
    for hpa in hpas:
        metadata = hpa.get("metadata") if isinstance(hpa, Mapping) else None
        namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
        if isinstance(hpa, Mapping) and isinstance(namespace, str) and scope.includes(namespace):
            grouped.setdefault(namespace, []).append(hpa)
    return grouped
