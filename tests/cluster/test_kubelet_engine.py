"""The simulator's engine driven with plain pod dicts (no API server): fast checks of
the kubelet behaviour the real-cluster tests then show end to end."""

from __future__ import annotations

import copy
from typing import Any

from tests.cluster.kubelet_sim.engine import EngineConfig, KubeletEngine, SimNode
from tests.cluster.kubelet_sim.quantities import Resources
from tests.cluster.kubelet_sim.usage import UsageSeries

Mi = 2**20
Json = dict[str, Any]


def make_pod(
    name: str,
    *,
    cpu: str,
    memory: str = "128Mi",
    memory_limit: str | None = "256Mi",
    cpu_limit: str | None = None,
    node: str = "node-a",
    qos: str = "Burstable",
    priority: int = 0,
) -> Json:
    limits = {k: v for k, v in (("cpu", cpu_limit), ("memory", memory_limit)) if v}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": 1},
        "spec": {
            "nodeName": node,
            "priority": priority,
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": limits},
                }
            ],
        },
        "status": {"phase": "Pending", "qosClass": qos},
    }


class FakeServer:
    """Holds pods like the API server would and applies what the engine writes."""

    def __init__(self, engine: KubeletEngine, *pods: Json) -> None:
        self.engine = engine
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.now = 1000.0
        self.writes = 0

    def sync(self, seconds: float = 0.2) -> None:
        self.now += seconds
        changed, deletions = self.engine.sync(list(copy.deepcopy(self.pods).values()), self.now)
        for pod in changed:
            self.pods[pod["metadata"]["name"]]["status"] = pod["status"]
            self.writes += 1
        for pod in deletions:
            del self.pods[pod["metadata"]["name"]]

    def resize(self, name: str, **requests: str) -> None:
        pod = self.pods[name]
        pod["spec"]["containers"][0]["resources"]["requests"].update(requests)
        pod["metadata"]["generation"] += 1

    def condition(self, name: str, kind: str) -> Json | None:
        conditions = self.pods[name]["status"].get("conditions") or []
        return next((c for c in conditions if c["type"] == kind), None)

    def container(self, name: str) -> Json:
        return dict(self.pods[name]["status"]["containerStatuses"][0])


def engine_with_node(cpu: int = 4000, memory: int = 8192 * Mi, **config: Any) -> KubeletEngine:
    engine = KubeletEngine(EngineConfig(**config))
    engine.add_node(SimNode("node-a", Resources(cpu, memory), Resources(cpu, memory)))
    return engine


def test_a_bound_pod_starts_running_with_its_resources_reported() -> None:
    server = FakeServer(engine_with_node(), make_pod("web", cpu="500m"))
    server.sync()
    status = server.pods["web"]["status"]
    assert status["phase"] == "Running"
    container = server.container("web")
    assert container["allocatedResources"] == {"cpu": "500m", "memory": "128Mi"}
    assert container["resources"] == {
        "requests": {"cpu": "500m", "memory": "128Mi"},
        "limits": {"memory": "256Mi"},
    }
    assert container["state"]["running"]["startedAt"]


def test_nothing_is_written_once_the_status_is_current() -> None:
    server = FakeServer(engine_with_node(), make_pod("web", cpu="500m"))
    server.sync()
    writes = server.writes
    for _ in range(5):
        server.sync()
    assert server.writes == writes


def test_the_kep_worked_sequence() -> None:
    engine = engine_with_node()
    server = FakeServer(engine, make_pod("kep", cpu="1"), make_pod("other", cpu="2300m"))
    server.sync()
    engine.held.add(("default", "kep"))

    server.resize("kep", cpu="1500m")
    server.sync()
    assert server.condition("kep", "PodResizeInProgress") is not None
    assert server.container("kep")["allocatedResources"]["cpu"] == "1500m"
    assert server.container("kep")["resources"]["requests"]["cpu"] == "1"

    server.resize("kep", cpu="2")
    server.sync()
    pending = server.condition("kep", "PodResizePending")
    assert pending is not None and pending["reason"] == "Deferred"
    assert pending["message"] == (
        "Node didn't have enough resource: cpu, requested: 2000, used: 2300, capacity: 4000"
    )
    assert server.condition("kep", "PodResizeInProgress") is not None

    engine.held.clear()
    server.sync()
    assert server.container("kep")["resources"]["requests"]["cpu"] == "1500m"
    assert server.condition("kep", "PodResizeInProgress") is None
    assert server.condition("kep", "PodResizePending") is not None

    server.resize("kep", cpu="1600m")
    server.sync()
    server.sync()
    assert server.container("kep")["resources"]["requests"]["cpu"] == "1600m"
    assert server.condition("kep", "PodResizePending") is None

    server.resize("kep", cpu="100")
    server.sync()
    pending = server.condition("kep", "PodResizePending")
    assert pending is not None and pending["reason"] == "Infeasible"
    assert pending["message"] == (
        "Node didn't have enough capacity: cpu, requested: 100000, capacity: 4000"
    )
    assert pending["observedGeneration"] == 5
    assert server.container("kep")["allocatedResources"]["cpu"] == "1600m"


def test_deferred_resizes_wait_for_room_and_go_in_priority_order() -> None:
    engine = engine_with_node()
    server = FakeServer(
        engine,
        make_pod("filler", cpu="1"),
        make_pod("low", cpu="1"),
        make_pod("high", cpu="1", priority=1000),
    )
    server.sync()
    server.resize("low", cpu="2200m")
    server.sync()
    server.resize("high", cpu="2200m")
    server.sync()
    for name in ("low", "high"):
        pending = server.condition(name, "PodResizePending")
        assert pending is not None and pending["reason"] == "Deferred"

    del server.pods["filler"]
    server.sync()
    assert server.condition("high", "PodResizePending") is None
    assert server.container("high")["allocatedResources"]["cpu"] == "2200m"
    assert server.condition("low", "PodResizePending") is not None


def test_infeasible_resizes_are_not_retried_until_the_spec_changes() -> None:
    engine = engine_with_node()
    server = FakeServer(engine, make_pod("big", cpu="1"), make_pod("other", cpu="1"))
    server.sync()
    server.resize("big", cpu="5")
    server.sync()
    del server.pods["other"]
    server.sync()
    pending = server.condition("big", "PodResizePending")
    assert pending is not None and pending["reason"] == "Infeasible"
    server.resize("big", cpu="3")
    server.sync()
    assert server.condition("big", "PodResizePending") is None


def test_memory_above_the_limit_is_an_oom_kill_and_a_restart() -> None:
    engine = engine_with_node()
    server = FakeServer(engine, make_pod("leaky", cpu="100m", memory_limit="256Mi"))
    engine.set_usage("default", "leak*", "app", UsageSeries((0.1,), (100 * Mi, 300 * Mi), 1.0))
    server.sync()
    server.sync(1.0)
    container = server.container("leaky")
    assert container["restartCount"] == 1
    assert container["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert container["lastState"]["terminated"]["exitCode"] == 137
    sample = engine.samples()[0]
    assert sample.last_terminated_reason == "OOMKilled"
    assert sample.memory_bytes == 100 * Mi  # the new container starts its curve again


def test_cpu_usage_accumulates_as_a_counter() -> None:
    engine = engine_with_node()
    server = FakeServer(engine, make_pod("busy", cpu="1"))
    engine.set_usage("default", "busy", "app", UsageSeries.constant(0.5, 10 * Mi))
    server.sync()
    for _ in range(10):
        server.sync(1.0)
    assert abs(engine.samples()[0].cpu_seconds - 5.0) < 1e-6


def test_cpu_above_the_limit_is_throttled_not_used() -> None:
    engine = engine_with_node()
    server = FakeServer(
        engine, make_pod("capped", cpu="250m", cpu_limit="250m"), make_pod("free", cpu="250m")
    )
    engine.set_usage("default", "*", "app", UsageSeries.constant(0.75, 10 * Mi))
    server.sync()
    for _ in range(10):
        server.sync(1.0)
    samples = {sample.pod: sample for sample in engine.samples()}
    assert abs(samples["capped"].cpu_seconds - 2.5) < 1e-6  # 10 s at its 0.25-core limit
    assert abs(samples["capped"].throttled_seconds - 5.0) < 1e-6  # 10 s of 0.5 held back
    assert abs(samples["free"].cpu_seconds - 7.5) < 1e-6
    assert samples["free"].throttled_seconds == 0.0


def test_memory_limit_decrease_below_usage_stays_in_progress_with_error() -> None:
    engine = engine_with_node()
    server = FakeServer(engine, make_pod("app", cpu="100m", memory_limit="512Mi"))
    engine.set_usage("default", "app", "app", UsageSeries.constant(0.1, 300 * Mi))
    server.sync()
    pod = server.pods["app"]
    pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "256Mi"
    pod["metadata"]["generation"] += 1
    server.sync()
    server.sync()
    in_progress = server.condition("app", "PodResizeInProgress")
    assert in_progress is not None and in_progress["reason"] == "Error"
    assert in_progress["message"].startswith("cannot decrease memory limits: [attempting to set")
    assert server.container("app")["resources"]["limits"]["memory"] == "512Mi"

    engine.set_usage("default", "app", "app", UsageSeries.constant(0.1, 200 * Mi))
    server.sync()
    server.sync()
    assert server.condition("app", "PodResizeInProgress") is None
    assert server.container("app")["resources"]["limits"]["memory"] == "256Mi"


def test_memory_pressure_evicts_the_pod_furthest_above_its_request() -> None:
    engine = engine_with_node(memory=1024 * Mi, eviction_interval=0.0)
    server = FakeServer(
        engine,
        make_pod("greedy", cpu="100m", memory="128Mi", memory_limit=None),
        make_pod("modest", cpu="100m", memory="512Mi", memory_limit=None),
    )
    engine.set_usage("default", "greedy", "app", UsageSeries.constant(0.1, 600 * Mi))
    engine.set_usage("default", "modest", "app", UsageSeries.constant(0.1, 400 * Mi))
    server.sync()
    server.sync()
    assert engine.node_pressure()["node-a"] is False  # evicted: pressure relieved
    greedy = server.pods["greedy"]["status"]
    assert greedy["phase"] == "Failed" and greedy["reason"] == "Evicted"
    assert greedy["message"] == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 24Mi. "
        "Container app was using 600Mi, request is 128Mi, has larger consumption of memory. "
    )
    assert server.condition("greedy", "DisruptionTarget") is not None
    assert server.pods["modest"]["status"]["phase"] == "Running"


def test_graceful_deletions_are_finished() -> None:
    engine = engine_with_node()
    server = FakeServer(engine, make_pod("web", cpu="100m"))
    server.sync()
    server.pods["web"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    server.sync()
    assert "web" not in server.pods


def test_a_pod_that_does_not_fit_is_rejected_on_admission() -> None:
    server = FakeServer(engine_with_node(), make_pod("huge", cpu="5"))
    server.sync()
    status = server.pods["huge"]["status"]
    assert status["phase"] == "Failed"
    assert status["reason"] == "OutOfcpu"
    assert status["message"].startswith("Pod was rejected: Node didn't have enough resource: cpu")


def test_init_containers_complete_and_sidecars_run_and_count() -> None:
    engine = engine_with_node(cpu=2000)
    pod = make_pod("with-sidecar", cpu="1")
    pod["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox", "resources": {"requests": {"cpu": "1900m"}}},
        {
            "name": "proxy",
            "image": "envoy",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}},
        },
    ]
    server = FakeServer(engine, pod)
    server.sync()
    inits = {s["name"]: s for s in server.pods["with-sidecar"]["status"]["initContainerStatuses"]}
    assert inits["setup"]["state"]["terminated"]["reason"] == "Completed"
    assert "running" in inits["proxy"]["state"]
    assert inits["proxy"]["allocatedResources"] == {"cpu": "500m", "memory": "64Mi"}
    # kube-state-metrics exports the sidecar as an init container; the completed one is gone
    assert {sample.container: sample.init for sample in engine.samples()} == {
        "app": False,
        "proxy": True,
    }
    # The sidecar's 500m counts beside the app container: 1 + 0.5 + 0.6 > 2 CPUs.
    server.resize("with-sidecar", cpu="1600m")
    server.sync()
    pending = server.condition("with-sidecar", "PodResizePending")
    assert pending is not None and pending["reason"] == "Infeasible"
    assert pending["message"] == (
        "Node didn't have enough capacity: cpu, requested: 2100, capacity: 2000"
    )
