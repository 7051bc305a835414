"""A VPA and an HPA on the same resource, coordinated instead of kept apart (pure).

An HPA on `averageUtilization` scales out when the pods' mean usage passes that
share of their mean request. Raise the request and the same usage is a smaller
share: the HPA removes pods, usage per pod rises, the VPA raises again. Keeping
the scale-out point where it was in absolute usage stops the chase:

    new_utilization = old_utilization * old_request / new_request

(the approach StormForge documents). `old_utilization` is what the HPA's owner set,
for the request in the workload's pod template (`old_request`); `new_request` is the
pods' mean request now. The value is rounded and held to [10, 95] %: below 10 an
HPA scales out on noise, above 95 it scales out only once the pods are saturated.
A held value is said, since the scale-out point then moves.

Opt-in per VPA with the annotation `kube-tailor.io/coordinate-hpa: "true"`: the
components then resize what such an HPA scales on (`tailor.hpa` reports no conflict)
and `tailor follow` rewrites the HPA's target. The HPA keeps what its owner set in
its annotation `kube-tailor.io/hpa-baseline` (JSON, per metric: the owner's
utilization and the value last written): a target found different from the one last
written was changed by its owner, and becomes the new baseline.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tailor.api.vpa import VerticalPodAutoscaler
from tailor.quantity import Quantity, QuantityError

Json = Mapping[str, Any]
COORDINATE_ANNOTATION = "kube-tailor.io/coordinate-hpa"
BASELINE_ANNOTATION = "kube-tailor.io/hpa-baseline"
MIN_UTILIZATION, MAX_UTILIZATION = 10, 95
COORDINATED_CONDITION = "HorizontalAutoscalerCoordinated"


def coordinates(vpa: VerticalPodAutoscaler) -> bool:
    """Whether the VPA asks for its HPAs' targets to be rewritten (opt-in, "true")."""
    text = (vpa.metadata.annotations or {}).get(COORDINATE_ANNOTATION, "")
    return text.strip().lower() == "true"


@dataclass(frozen=True)
class Utilization:
    """One target utilization: what the owner set, and what keeps it in absolute terms."""

    value: int  # to write
    exact: float  # before rounding and bounds
    held: bool  # the bounds held it: the scale-out point moves

    def explain(self, resource: str, owner: int, old: float, new: float) -> str:
        unit = _unit(resource)
        point = owner / 100 * old
        text = (
            f"{resource} target {owner}% of {_amount(old, unit)} -> {self.value}% of "
            f"{_amount(new, unit)}: scale-out at {_amount(point, unit)} per pod"
        )
        if self.held:
            text += (
                f" (held to {MIN_UTILIZATION}..{MAX_UTILIZATION}% from {self.exact:.1f}%: "
                f"scale-out now at {_amount(self.value / 100 * new, unit)} per pod)"
            )
        return text


def _unit(resource: str) -> str:
    return "cores" if resource == "cpu" else "bytes"


def _amount(value: float, unit: str) -> str:
    if unit == "cores":
        return f"{value * 1000:.0f}m"
    return f"{value / 2**20:.0f}Mi"


def coordinated_utilization(owner: int, old_request: float, new_request: float) -> Utilization:
    """The target utilization that keeps `owner` % of `old_request` as the scale-out point
    with pods requesting `new_request`; ValueError on a request that is not positive."""
    if not (old_request > 0 and new_request > 0) or not math.isfinite(old_request + new_request):
        raise ValueError(f"requests must be positive: {old_request}, {new_request}")
    exact = owner * old_request / new_request
    value = min(max(round(exact), MIN_UTILIZATION), MAX_UTILIZATION)
    return Utilization(value, exact, held=value != round(exact))


def _request(container: Json, resource: str) -> float | None:
    requests = (container.get("resources") or {}).get("requests") or {}
    text = requests.get(resource)
    if text is None:
        return None
    try:
        return float(Quantity.parse(text))
    except QuantityError:
        return None


def pod_request(pod_spec: Json, resource: str, container: str | None = None) -> float | None:
    """What the HPA divides usage by for one pod: the sum over its containers (a Resource
    metric) or one container's (ContainerResource); None when one of them sets none (the
    HPA then cannot compute a utilization either)."""
    total = 0.0
    for item in pod_spec.get("containers") or []:
        if container is not None and item.get("name") != container:
            continue
        value = _request(item, resource)
        if value is None:
            return None
        total += value
    return total if total > 0 else None


def mean_request(pods: Iterable[Json], resource: str, container: str | None = None) -> float | None:
    """The pods' mean request (the HPA's denominator over its pods); None without one."""
    values = [pod_request(p.get("spec") or {}, resource, container) for p in pods]
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass(frozen=True)
class MetricRewrite:
    """One utilization metric of an HPA and what it becomes."""

    key: str  # "cpu", or "container/cpu" for a ContainerResource metric
    owner: int  # the owner's utilization (the baseline)
    current: int  # the HPA's target now
    new: Utilization
    old_request: float
    new_request: float

    @property
    def resource(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    def explain(self) -> str:
        where = f"container {self.key.split('/')[0]}'s " if "/" in self.key else ""
        said = self.new.explain(self.resource, self.owner, self.old_request, self.new_request)
        return where + said


@dataclass(frozen=True)
class HpaRewrite:
    """The HPA's metrics to write (the whole list: a merge patch replaces lists) and why."""

    name: str
    metrics: list[Any]
    baseline: dict[str, dict[str, int]]
    changes: list[MetricRewrite]

    def patch(self) -> dict[str, Any]:
        text = json.dumps(self.baseline, sort_keys=True)
        return {
            "metadata": {"annotations": {BASELINE_ANNOTATION: text}},
            "spec": {"metrics": self.metrics},
        }

    def explain(self) -> str:
        return f"HPA {self.name}: " + "; ".join(change.explain() for change in self.changes)


def _baseline(hpa: Json) -> dict[str, dict[str, int]]:
    text = ((hpa.get("metadata") or {}).get("annotations") or {}).get(BASELINE_ANNOTATION)
    try:
        found = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {
        str(key): {"owner": int(item["owner"]), "written": int(item["written"])}
        for key, item in found.items()
        if isinstance(item, dict) and {"owner", "written"} <= set(item)
    }


def _utilization_metric(entry: object) -> tuple[str, str, str | None, int] | None:
    """(key, resource, container, averageUtilization) of a cpu / memory Utilization metric."""
    if not isinstance(entry, Mapping):
        return None
    kind = entry.get("type")
    field = {"Resource": "resource", "ContainerResource": "containerResource"}.get(str(kind))
    source = entry.get(field) if field else None
    if not isinstance(source, Mapping) or source.get("name") not in ("cpu", "memory"):
        return None
    target = source.get("target") or {}
    value = target.get("averageUtilization")
    if target.get("type") != "Utilization" or not isinstance(value, int) or value <= 0:
        return None
    resource = str(source["name"])
    container = source.get("container") if kind == "ContainerResource" else None
    if kind == "ContainerResource" and not isinstance(container, str):
        return None
    key = f"{container}/{resource}" if container else resource
    return key, resource, container, value


def hpa_rewrite(hpa: Json, template: Json, pods: Iterable[Json]) -> HpaRewrite | None:
    """The rewrite of the HPA's utilization targets for pods sized as `pods` are, whose
    owner set the targets for the requests of `template` (the workload's pod template
    spec); None when no target changes."""
    pods = list(pods)
    metrics = list((hpa.get("spec") or {}).get("metrics") or [])
    baseline = _baseline(hpa)
    kept: dict[str, dict[str, int]] = {}
    changes: list[MetricRewrite] = []
    written = []
    for entry in metrics:
        found = _utilization_metric(entry)
        if found is None:
            written.append(entry)
            continue
        key, resource, container, current = found
        before = baseline.get(key)
        owner = before["owner"] if before and before["written"] == current else current
        old = pod_request(template, resource, container)
        new = mean_request(pods, resource, container)
        if old is None or new is None:
            written.append(entry)
            continue
        value = coordinated_utilization(owner, old, new)
        kept[key] = {"owner": owner, "written": value.value}
        field = "resource" if container is None else "containerResource"
        source = dict(entry[field])
        source["target"] = {**source["target"], "averageUtilization": value.value}
        written.append({**entry, field: source})
        if value.value != current:
            changes.append(MetricRewrite(key, owner, current, value, old, new))
    if not changes:
        return None
    name = str((hpa.get("metadata") or {}).get("name", ""))
    return HpaRewrite(name, written, kept, changes)
