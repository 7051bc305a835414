"""Which of a pod's containers a VPA sizes: app containers and native sidecars (pure).

A native sidecar (KEP-753) is an init container with `restartPolicy: Always`: it
starts before the app containers and runs beside them for the pod's life, so it
uses resources as they do, the scheduler sums it with them, and the kubelet
resizes it in place (Kubernetes 1.33 and later). Upstream's VPA ignores every init
container; kube-tailor recommends for sidecars, sizes them at admission and
resizes them in place, and leaves plain init containers (which run to completion
before the pod starts) alone. The webhook, the updater and the recommender
service must agree on that set, so the rule lives here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Json = Mapping[str, Any]

APP_FIELD = "containers"
INIT_FIELD = "initContainers"
SIDECAR_RESTART_POLICY = "Always"


def is_native_sidecar(container: Json) -> bool:
    """An init container that keeps running beside the app containers."""
    return container.get("restartPolicy") == SIDECAR_RESTART_POLICY


@dataclass(frozen=True)
class SizedContainer:
    """One container a VPA sizes, with where it sits in the pod's spec."""

    field: str  # APP_FIELD or INIT_FIELD
    index: int  # its position in that list, for JSON patches
    spec: Json

    @property
    def name(self) -> str:
        return str(self.spec.get("name"))

    @property
    def sidecar(self) -> bool:
        return self.field == INIT_FIELD


def _listed(spec: Json, field: str) -> list[Any]:
    found = spec.get(field)
    return found if isinstance(found, list) else []


def sized_containers(pod: Json) -> list[SizedContainer]:
    """The app containers in order, then the native sidecars; entries that are not
    objects are skipped (readers that must refuse them check the pod themselves)."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return []
    app = [
        SizedContainer(APP_FIELD, index, container)
        for index, container in enumerate(_listed(spec, APP_FIELD))
        if isinstance(container, Mapping)
    ]
    sidecars = [
        SizedContainer(INIT_FIELD, index, container)
        for index, container in enumerate(_listed(spec, INIT_FIELD))
        if isinstance(container, Mapping) and is_native_sidecar(container)
    ]
    return app + sidecars


def sized_container_names(pod: Json) -> list[str]:
    """The names of the containers a VPA sizes (what a recommendation lists)."""
    return [container.name for container in sized_containers(pod)]


def plain_init_container_names(pod: Json) -> list[str]:
    """Init containers that run to completion before the pod starts: never resized."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return []
    return [
        str(container.get("name"))
        for container in _listed(spec, INIT_FIELD)
        if isinstance(container, Mapping) and not is_native_sidecar(container)
    ]


def container_statuses(pod: Json) -> dict[str, Json]:
    """The kubelet's status of each container by name, init containers' included."""
    status = pod.get("status")
    if not isinstance(status, Mapping):
        return {}
    found: dict[str, Json] = {}
    for field in ("containerStatuses", "initContainerStatuses"):
        for entry in _listed(status, field):
            # a dict first: the ABC check costs more, and every pod of a pass asks
            if isinstance(entry, dict) or isinstance(entry, Mapping):  # noqa: SIM101
                found[str(entry.get("name"))] = entry
    return found
