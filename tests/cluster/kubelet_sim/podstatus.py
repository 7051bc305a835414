"""Pod and node status documents as a kubelet writes them (plain dicts for the API).

Pure helpers: they build or edit status dicts and never call the API, so the
simulator's loop stays a thin edge around them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from tests.cluster.kubelet_sim.usage import ContainerRuntime, Termination

RESIZE_PENDING = "PodResizePending"
RESIZE_IN_PROGRESS = "PodResizeInProgress"
DECLARED_FEATURES = ("InPlacePodLevelResourcesVerticalScaling",)
_RUNNING_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")

Json = dict[str, Any]


def rfc3339(timestamp: float) -> str:
    """UNIX seconds as the API's second-precision UTC timestamp."""
    moment = dt.datetime.fromtimestamp(int(timestamp), dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def fake_id(*parts: str) -> str:
    """A stable 64-hex id (container ids, image digests) derived from `parts`."""
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def resource_requirements(resources: Json | None) -> Json:
    """Just the requests / limits of a container's resources (what status echoes)."""
    resources = resources or {}
    out: Json = {}
    for key in ("requests", "limits"):
        values = {k: v for k, v in (resources.get(key) or {}).items() if k in ("cpu", "memory")}
        if values:
            out[key] = values
    return out


def set_condition(
    status: Json,
    kind: str,
    *,
    now: float,
    reason: str = "",
    message: str = "",
    observed_generation: int | None = None,
    value: str = "True",
) -> None:
    """Add or update condition `kind`; the transition time moves only when status or
    reason change."""
    conditions: list[Json] = status.setdefault("conditions", [])
    existing = next((c for c in conditions if c.get("type") == kind), None)
    condition: Json = {"type": kind, "status": value, "lastProbeTime": None}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    if observed_generation is not None:
        condition["observedGeneration"] = observed_generation
    unchanged = (
        existing is not None
        and existing.get("status") == value
        and existing.get("reason", "") == reason
    )
    condition["lastTransitionTime"] = (
        existing.get("lastTransitionTime") if unchanged and existing else rfc3339(now)
    )
    if existing is not None:
        conditions[conditions.index(existing)] = condition
    else:
        conditions.append(condition)


def remove_condition(status: Json, kind: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind]


def get_condition(status: Json, kind: str) -> Json | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def _terminated(termination: Termination, container_id: str) -> Json:
    return {
        "terminated": {
            "reason": termination.reason,
            "exitCode": termination.exit_code,
            "startedAt": rfc3339(termination.started_at),
            "finishedAt": rfc3339(termination.finished_at),
            "containerID": container_id,
        }
    }


def container_status(
    container: Json,
    *,
    pod_uid: str,
    runtime: ContainerRuntime,
    actual: Json,
    allocated: Json,
) -> Json:
    """A running container's status with its applied resources and allocated requests."""
    image = container.get("image", "registry.k8s.io/pause:3.10")
    container_id = "containerd://" + fake_id(pod_uid, container["name"], str(runtime.restart_count))
    status: Json = {
        "name": container["name"],
        "image": image,
        "imageID": f"{image.split('@')[0]}@sha256:{fake_id(image)}",
        "containerID": container_id,
        "ready": True,
        "started": True,
        "restartCount": runtime.restart_count,
        "state": {"running": {"startedAt": rfc3339(runtime.started_at)}},
        "lastState": {},
        "resources": resource_requirements(actual),
    }
    requests = resource_requirements(allocated).get("requests")
    if requests:
        status["allocatedResources"] = requests
    if runtime.last_termination is not None:
        previous_id = "containerd://" + fake_id(
            pod_uid, container["name"], str(runtime.restart_count - 1)
        )
        status["lastState"] = _terminated(runtime.last_termination, previous_id)
    return status


def completed_init_status(container: Json, *, pod_uid: str, started: float) -> Json:
    """A plain init container that ran to completion."""
    image = container.get("image", "registry.k8s.io/pause:3.10")
    container_id = "containerd://" + fake_id(pod_uid, container["name"], "0")
    return {
        "name": container["name"],
        "image": image,
        "imageID": f"{image.split('@')[0]}@sha256:{fake_id(image)}",
        "containerID": container_id,
        "ready": True,
        "started": False,
        "restartCount": 0,
        "state": _terminated(Termination("Completed", 0, started, started), container_id),
        "lastState": {},
        "resources": resource_requirements(container.get("resources")),
    }


def mark_running(status: Json, *, now: float, host_ip: str, pod_ip: str) -> None:
    """Phase Running with the kubelet's readiness conditions and addresses."""
    status["phase"] = "Running"
    status["hostIP"] = host_ip
    status["hostIPs"] = [{"ip": host_ip}]
    status["podIP"] = pod_ip
    status["podIPs"] = [{"ip": pod_ip}]
    status.setdefault("startTime", rfc3339(now))
    for kind in _RUNNING_CONDITIONS:
        set_condition(status, kind, now=now)


def mark_failed(status: Json, *, reason: str, message: str) -> None:
    """Phase Failed (admission rejection or eviction); containers no longer ready."""
    status["phase"] = "Failed"
    status["reason"] = reason
    status["message"] = message
    for container in status.get("containerStatuses") or []:
        container["ready"] = False
        container["started"] = False
        running = (container.get("state") or {}).get("running")
        if running is not None:
            container["state"] = {
                "terminated": {
                    "reason": "Error",
                    "exitCode": 137,
                    "startedAt": running.get("startedAt"),
                    "finishedAt": rfc3339(dt.datetime.now(dt.UTC).timestamp()),
                }
            }


def node_status(
    *,
    capacity: Json,
    allocatable: Json,
    now: float,
    memory_pressure: bool,
    kubelet_version: str,
) -> Json:
    """The status a kubelet posts for a Ready node without the real machine behind it."""

    def condition(kind: str, value: str, reason: str, message: str) -> Json:
        stamp = rfc3339(now)
        return {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
        }

    if memory_pressure:
        pressure = condition(
            "MemoryPressure",
            "True",
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
        )
    else:
        pressure = condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        )
    return {
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": [
            pressure,
            condition(
                "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
            ),
            condition(
                "PIDPressure",
                "False",
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
            ),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        # NodeDeclaredFeatures (KEP-5328): a 1.36 API server refuses (403) a pod-level
        # resize on a node that does not declare it
        "declaredFeatures": list(DECLARED_FEATURES),
        "nodeInfo": {
            "machineID": "kube-tailor-sim",
            "systemUUID": "kube-tailor-sim",
            "bootID": "kube-tailor-sim",
            "kernelVersion": "6.1.0",
            "osImage": "kube-tailor kubelet simulator",
            "containerRuntimeVersion": "containerd://2.1.0",
            "kubeletVersion": kubelet_version,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }
