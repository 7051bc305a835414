"""What the demo watches (`make demo-cluster`): pods resized in place, sized by the webhook
and Deferred by the kubelet, kept in `Observed`, and the live view's frame of them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tailor.quantity import Quantity
from tests.cluster.demo_fleet import NAMESPACE
from tests.cluster.rawapi import Json, RawApi


def resize_deferred(pod: Json) -> bool:
    """Whether the kubelet put off the pod's resize (PodResizePending, reason Deferred)."""
    return any(
        c.get("type") == "PodResizePending" and c.get("reason") == "Deferred"
        for c in pod.get("status", {}).get("conditions", [])
    )


def resize_applied(pod: Json) -> bool:
    """Whether the kubelet runs the pod at its spec's requests (nothing pending)."""
    wanted = pod["spec"]["containers"][0].get("resources", {}).get("requests", {})
    statuses = pod.get("status", {}).get("containerStatuses") or [{}]
    running = (statuses[0].get("resources") or {}).get("requests", {})
    same = {k: Quantity.parse(str(v)) for k, v in running.items()} == {
        k: Quantity.parse(str(v)) for k, v in wanted.items()
    }
    pending = any(c.get("type") == "PodResizePending" for c in pod["status"].get("conditions", []))
    return same and not pending


@dataclass
class Observed:
    """What the demo saw: pods by UID with the requests first seen, in-place resizes, and
    resizes the kubelet Deferred (then applied)."""

    first_requests: dict[str, tuple[str, str]] = field(default_factory=dict)
    resized: dict[str, tuple[str, tuple[str, str], tuple[str, str]]] = field(default_factory=dict)
    webhook_sized: set[str] = field(default_factory=set)
    deferred: dict[str, str] = field(default_factory=dict)  # uid -> the kubelet's message
    deferred_applied: set[str] = field(default_factory=set)
    started: float = field(default_factory=time.monotonic)
    first_resize_after: float | None = None

    def record(self, pods: list[Json]) -> None:
        for pod in pods:
            uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
            requests = pod["spec"]["containers"][0].get("resources", {}).get("requests", {})
            now = (str(requests.get("cpu")), str(requests.get("memory")))
            before = self.first_requests.setdefault(uid, now)
            if now != before and uid not in self.resized:
                self.resized[uid] = (name, before, now)
                if self.first_resize_after is None:
                    self.first_resize_after = time.monotonic() - self.started
            if (pod["metadata"].get("annotations") or {}).get("vpaUpdates"):
                self.webhook_sized.add(uid)
            if resize_deferred(pod) and uid not in self.deferred:
                found = pod["status"]["conditions"]
                why = [c.get("message", "") for c in found if c["type"] == "PodResizePending"]
                self.deferred[uid] = why[0]
            elif uid in self.deferred and resize_applied(pod):
                self.deferred_applied.add(uid)


def _table(title: str, *columns: str) -> Any:
    from rich.table import Table

    table = Table(title=title, expand=True)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _vpa_row(vpa: Json) -> list[str]:
    status = vpa.get("status") or {}
    recommended = (status.get("recommendation") or {}).get("containerRecommendations") or [{}]
    target = recommended[0].get("target", {})
    why = next(
        (c.get("message", "") for c in status.get("conditions", []) if c.get("message")),
        "waiting for the recommender's first pass",
    )
    mode = vpa["spec"]["updatePolicy"]["updateMode"]
    cpu, memory = str(target.get("cpu", "-")), str(target.get("memory", "-"))
    return [vpa["metadata"]["name"], mode, cpu, memory, why[:160]]


def _pod_row(pod: Json, observed: Observed) -> list[str]:
    uid = pod["metadata"]["uid"]
    requests = pod["spec"]["containers"][0].get("resources", {}).get("requests", {})
    restarts = sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses", []))
    change = observed.resized.get(uid)
    notes = ["webhook"] if uid in observed.webhook_sized else []
    if change:
        notes.append(f"in place: {'/'.join(change[1])} -> {'/'.join(change[2])}")
    if uid in observed.deferred_applied:
        notes.append("Deferred by the kubelet, then applied")
    elif uid in observed.deferred:
        notes.append(f"Deferred: {observed.deferred[uid]}")
    node = pod["spec"].get("nodeName", "-")
    cpu, memory = str(requests.get("cpu", "-")), str(requests.get("memory", "-"))
    return [pod["metadata"]["name"], uid[:8], node, cpu, memory, str(restarts), "; ".join(notes)]


def _event_row(event: Json) -> list[str]:
    involved = event["involvedObject"]
    when = (event.get("lastTimestamp") or event.get("eventTime") or "")[11:19]
    subject = f"{involved['kind'].lower()}/{involved['name']}"
    return [when, event.get("type", ""), event.get("reason", ""), subject, event["message"][:120]]


def view(api: RawApi, pods: list[Json], observed: Observed) -> Any:
    """One frame of the live view: VPAs, pods and the latest Events."""
    from rich.console import Group

    vpas = _table("VerticalPodAutoscalers", "VPA", "mode", "cpu", "memory", "explanation")
    found = api.get(f"/apis/autoscaling.k8s.io/v1/namespaces/{NAMESPACE}/verticalpodautoscalers")
    for vpa in found["items"]:
        vpas.add_row(*_vpa_row(vpa))
    columns = ("pod", "uid", "node", "cpu req", "memory req", "restarts", "sized / resized")
    table = _table("Pods (an in-place resize keeps the UID)", *columns)
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        table.add_row(*_pod_row(pod, observed))
    events = _table("Events (kubectl get events)", "time", "type", "reason", "object", "message")
    happened = api.get(f"/api/v1/namespaces/{NAMESPACE}/events")["items"]
    happened.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "", reverse=True)
    for event in happened[:8]:
        events.add_row(*_event_row(event))
    return Group(vpas, table, events)
