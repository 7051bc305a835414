"""What the simulated kubelet remembers about its nodes and pods.

Plain records plus helpers that read a pod's resources from its API dict the
way the kubelet does: app containers and sidecars are resizable, plain init
containers are not, and other pods count with max(allocated, actuated).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.cluster.kubelet_sim import podstatus as ps
from tests.cluster.kubelet_sim import rules
from tests.cluster.kubelet_sim.quantities import Resources, optional_memory, resources_of
from tests.cluster.kubelet_sim.usage import ContainerRuntime

Json = dict[str, Any]


@dataclass
class SimNode:
    """A node this kubelet plays."""

    name: str
    capacity: Resources
    allocatable: Resources
    max_pods: int = 110
    cpu_manager_static: bool = False
    memory_manager_static: bool = False
    index: int = 0
    memory_pressure: bool = False
    last_eviction: float = 0.0

    def limits(self) -> rules.NodeLimits:
        return rules.NodeLimits(
            self.allocatable, self.max_pods, self.cpu_manager_static, self.memory_manager_static
        )


@dataclass
class PodRecord:
    """What the kubelet remembers about one admitted (or rejected) pod."""

    uid: str
    namespace: str
    name: str
    node: str
    pod: Json
    pod_ip: str
    allocated: dict[str, Json] = field(default_factory=dict)
    actual: dict[str, Json] = field(default_factory=dict)
    runtimes: dict[str, ContainerRuntime] = field(default_factory=dict)
    evaluated_generation: int = 0
    pending_reason: str = ""
    pending_message: str = ""
    pending_since: float | None = None
    in_progress_generation: int | None = None
    accepted_at: float = 0.0
    accepted_tick: int = -1
    actuation_error: str = ""
    terminal_reason: str = ""
    terminal_message: str = ""
    deleting_since: float | None = None

    @property
    def running(self) -> bool:
        return not self.terminal_reason

    @property
    def generation(self) -> int:
        return int(self.pod["metadata"].get("generation") or 1)

    @property
    def priority(self) -> int:
        return int(self.pod["spec"].get("priority") or 0)

    @property
    def guaranteed(self) -> bool:
        return (self.pod.get("status") or {}).get("qosClass") == "Guaranteed"


POD_LEVEL = ""  # the key of the pod-level stanza in requirement maps (no container's name)


def resizable(spec: Json) -> list[Json]:
    """Containers whose resources the kubelet allocates: app containers and sidecars."""
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return [*spec.get("containers", []), *sidecars]


def container_requirements(container: Json) -> Json:
    """Requests and limits (cpu / memory) from a container spec."""
    return ps.resource_requirements(container.get("resources"))


def requirements_of(spec: Json) -> dict[str, Json]:
    """What the kubelet allocates, by container name, and the pod-level stanza
    (spec.resources, KEP-2837; resized in place since 1.36, KEP-5419) under POD_LEVEL."""
    found = {c["name"]: container_requirements(c) for c in resizable(spec)}
    stanza = ps.resource_requirements(spec.get("resources"))
    if stanza:
        found[POD_LEVEL] = stanza
    return found


def normalized(requirements: Json) -> tuple[Resources, int | None, int | None]:
    limits = requirements.get("limits") or {}
    limit_cpu = resources_of({"cpu": limits["cpu"]}).cpu if "cpu" in limits else None
    return resources_of(requirements.get("requests")), limit_cpu, optional_memory(limits)


def same(left: dict[str, Json], right: dict[str, Json]) -> bool:
    return left.keys() == right.keys() and all(
        normalized(left[name]) == normalized(right[name]) for name in left
    )


def pod_shape(spec: Json, requirements: dict[str, Json]) -> rules.PodShape:
    """The pod's requests with `requirements` standing in for resizable containers."""

    def requests(container: Json) -> Resources:
        chosen = requirements.get(container["name"]) or container_requirements(container)
        return resources_of(chosen.get("requests"))

    inits = tuple(
        rules.InitContainer(requests(c), c.get("restartPolicy") == "Always")
        for c in spec.get("initContainers") or []
    )
    containers = tuple(requests(c) for c in spec.get("containers", []))
    stanza = (requirements.get(POD_LEVEL) or {}).get("requests") or {}
    pod = resources_of(stanza)
    return rules.PodShape(
        containers,
        inits,
        resources_of(spec.get("overhead")),
        pod.cpu if "cpu" in stanza else None,
        pod.memory if "memory" in stanza else None,
    )


def desired_requirements(record: PodRecord) -> dict[str, Json]:
    return requirements_of(record.pod["spec"])


def changes(desired: dict[str, Json], allocated: dict[str, Json], resource: str) -> bool:
    def amount(requirements: Json) -> Any:
        return (requirements.get("requests") or {}).get(resource)

    return any(
        resources_of({resource: amount(desired[n])})
        != resources_of({resource: amount(allocated.get(n, {}))})
        for n in desired
    )


def max_requests(allocated: Json, actual: Json | None) -> Json:
    counted = resources_of(allocated.get("requests")).maximum(
        resources_of((actual or {}).get("requests"))
    )
    present = {*(allocated.get("requests") or {}), *((actual or {}).get("requests") or {})}
    both = {"cpu": f"{counted.cpu}m", "memory": str(counted.memory)}
    return {key: value for key, value in both.items() if key in present}


def optional_resources(resource_list: Json | None) -> Resources | None:
    return resources_of(resource_list) if resource_list else None
