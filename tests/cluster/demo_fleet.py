"""The demo's fleet (`make demo-cluster`): its workloads, the history they backfill into
Prometheus, the usage they play on the kubelet simulator, and what is done to them live
(the job that ends on node-3, the replica added for the webhook to size)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tailor.quantity import cpu_cores, memory_bytes
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.kubelet_sim.usage import UsageSeries
from tests.cluster.rawapi import Json, RawApi

NAMESPACE = "demo"
SYSTEM = "kube-tailor"
SCHEDULE = f"{SYSTEM}/tailor-schedule"
Mi = 2**20
STEP = 300
# The daily peak is now, whenever the demo runs: the fleet's web Deployment is over its
# request in the hour in force, so the recommender raises it at once and the updater
# resizes its pods in place within minutes instead of at the next hour's boundary.
PEAK_HOUR = (time.time() % 86400) / 3600


@dataclass(frozen=True)
class Workload:
    """One Deployment of the fleet: its history's shape and the VPA that names kube-tailor."""

    name: str
    replicas: int
    cpu_request: str
    memory_request: str
    mode: str
    cpu: tuple[float, float]  # (night, peak) cores of the daily cycle; equal: flat
    memory_mib: float
    memory_limit: str | None = None
    pdb_min_available: int | None = None
    leak_mib_per_minute: float = 0.0  # live memory growth: reaches the limit, OOM-killed
    pool: str = "main"  # the nodes it runs on (label kube-tailor.io/demo-pool)

    def cpu_at(self, seconds: np.ndarray) -> np.ndarray:
        hours = (seconds % 86400) / 3600
        cycle = np.clip(np.cos((hours - PEAK_HOUR) / 24 * 2 * np.pi), 0, None)
        return self.cpu[0] + (self.cpu[1] - self.cpu[0]) * cycle


FLEET = (
    Workload("web", 2, "500m", "512Mi", "InPlace", (0.1, 1.2), 300),
    Workload("batch", 1, "500m", "1Gi", "InPlaceOrRecreate", (0.05, 0.05), 200),
    Workload("leaky", 1, "100m", "200Mi", "InPlace", (0.05, 0.05), 150, "200Mi", None, 30.0),
    Workload("api", 3, "400m", "256Mi", "InPlaceOrRecreate", (0.08, 0.1), 120, None, 2),
    # alone on node-3 beside NIGHTLY_JOB: its growth is Deferred until the job finishes
    Workload("queue", 1, "500m", "256Mi", "InPlace", (0.1, 1.2), 150, pool="queue"),
)
POOL_LABEL = "kube-tailor.io/demo-pool"
# node-3 says 3 CPU in its Node status while its kubelet holds 1 back (a reservation raised,
# not reported yet): queue's growth (500m -> about 1.3) fits by the Node, so the updater
# resizes it, and not beside the job by the kubelet's count (1 + 1.3 > 2), so it is Deferred
QUEUE_NODE, QUEUE_NODE_CPU, QUEUE_NODE_KUBELET_CPU = "node-3", "3", "2"
NIGHTLY_JOB = "nightly-job"


def history(end: int, days: int) -> pd.DataFrame:
    """What the fleet used over the last `days`, one pod per workload, as kube-state-metrics
    and cAdvisor would have recorded it: the forecaster's days to learn from."""
    rng = np.random.default_rng(7)
    times = np.arange(end - days * 86400, end, STEP)
    frames: list[pd.DataFrame] = []
    for workload in FLEET:
        cpu = workload.cpu_at(times) + rng.normal(0, 0.01, times.size)
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": pd.to_datetime(times, unit="s", utc=True),
                    "namespace": NAMESPACE,
                    "workload": workload.name,
                    "pod": f"{workload.name}-5d8f7c9b4-old{len(frames)}",
                    "container": "app",
                    "cpu": np.clip(cpu, 0.01, None),
                    "memory": workload.memory_mib * Mi + rng.integers(0, 8 * Mi, times.size),
                    "cpu_request": cpu_cores(workload.cpu_request),
                    "memory_request": memory_bytes(workload.memory_request),
                    "cpu_limit": np.nan,
                    "memory_limit": memory_bytes(workload.memory_limit)
                    if workload.memory_limit
                    else np.nan,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def live_usage(workload: Workload, now: float) -> UsageSeries:
    """The usage a new container of `workload` plays from now: the cycle's current level,
    and for a leaking one memory that climbs a step a minute."""
    cpu = float(workload.cpu_at(np.array([now]))[0])
    if not workload.leak_mib_per_minute:
        return UsageSeries.constant(cpu, int(workload.memory_mib * Mi))
    memory = [int((workload.memory_mib + workload.leak_mib_per_minute * i) * Mi) for i in range(60)]
    return UsageSeries((cpu,), memory, step_seconds=60)


def manifests(workload: Workload) -> list[tuple[str, Json]]:
    """(collection, object) of the workload's Deployment, VPA and PodDisruptionBudget."""
    labels = {"app": workload.name}
    limits = {"memory": workload.memory_limit} if workload.memory_limit else {}
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {
            "requests": {"cpu": workload.cpu_request, "memory": workload.memory_request},
            **({"limits": limits} if limits else {}),
        },
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": workload.name},
        "spec": {
            "replicas": workload.replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], "nodeSelector": {POOL_LABEL: workload.pool}},
            },
        },
    }
    vpa = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": workload.name},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload.name},
            "recommenders": [{"name": "kube-tailor"}],
            "updatePolicy": {"updateMode": workload.mode},
        },
    }
    found = [
        (f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", deployment),
        (f"/apis/autoscaling.k8s.io/v1/namespaces/{NAMESPACE}/verticalpodautoscalers", vpa),
    ]
    if workload.pdb_min_available is not None:
        pdb = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": workload.name},
            "spec": {
                "minAvailable": workload.pdb_min_available,
                "selector": {"matchLabels": labels},
            },
        }
        found.append((f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets", pdb))
    return found


def nightly_job() -> Json:
    """A one-off pod on node-3 (no VPA) taking the room queue's growth needs, until it ends."""
    container = {
        "name": "job",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "1", "memory": "256Mi"}},
    }
    spec = {"containers": [container], "nodeName": QUEUE_NODE, "restartPolicy": "Never"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": NIGHTLY_JOB}, "spec": spec}


def create_fleet(api: RawApi) -> None:
    for workload in FLEET:
        for collection, manifest in manifests(workload):
            api.create(collection, manifest)
    api.create(f"/api/v1/namespaces/{NAMESPACE}/pods", nightly_job())


def finish_nightly_job(api: RawApi) -> None:
    """The job ends (its pod goes): the kubelet retries the Deferred resize, which now fits."""
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{NIGHTLY_JOB}"
    api.request("DELETE", path, {"gracePeriodSeconds": 0})


def feed_usage(api: RawApi, sim: KubeletSimulator, seen: set[str]) -> list[Json]:
    """The fleet's pods; each new one gets its workload's live usage on the simulator."""
    pods = api.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    by_name = {w.name: w for w in FLEET}
    for pod in pods:
        workload = by_name.get((pod["metadata"].get("labels") or {}).get("app", ""))
        if workload and pod["metadata"]["uid"] not in seen:
            sim.set_usage(
                NAMESPACE, pod["metadata"]["name"], "app", live_usage(workload, time.time())
            )
            seen.add(pod["metadata"]["uid"])
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def scale_api_up(api: RawApi) -> None:
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/api/scale"
    scale = api.get(path)
    scale["spec"]["replicas"] += 1
    api.request("PUT", path, scale)
