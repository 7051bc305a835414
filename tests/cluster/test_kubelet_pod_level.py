"""The simulator's kubelet with pod-level resources (spec.resources, KEP-2837 / KEP-5419):
fit counted at the pod-level requests, a pod-level resize allocated, deferred or refused,
and the pod-level status fields reported (plain dicts, no API server)."""

from __future__ import annotations

from tests.cluster.kubelet_sim.usage import UsageSeries
from tests.cluster.test_kubelet_engine import FakeServer, Json, Mi, engine_with_node, make_pod


def pod_level(name: str, cpu: str, memory: str = "256Mi", limit: str = "512Mi") -> Json:
    pod = make_pod(name, cpu="1")  # container stanza dropped below: they share the pod's
    pod["spec"]["containers"][0]["resources"] = {}
    pod["spec"]["containers"].append({"name": "side", "image": "nginx"})
    pod["spec"]["resources"] = {
        "requests": {"cpu": cpu, "memory": memory},
        "limits": {"memory": limit},
    }
    return pod


def resize_pod_level(server: FakeServer, name: str, **requests: str) -> None:
    pod = server.pods[name]
    pod["spec"]["resources"]["requests"].update(requests)
    pod["metadata"]["generation"] += 1


def pending(server: FakeServer, name: str) -> Json | None:
    return server.condition(name, "PodResizePending")


def test_a_pod_level_resize_is_allocated_applied_and_reported() -> None:
    server = FakeServer(engine_with_node(), pod_level("web", cpu="500m"))
    server.sync()
    status = server.pods["web"]["status"]
    assert status["allocatedResources"] == {"cpu": "500m", "memory": "256Mi"}
    resize_pod_level(server, "web", cpu="1500m")
    server.sync()
    server.sync()
    status = server.pods["web"]["status"]
    assert status["allocatedResources"]["cpu"] == "1500m"
    assert status["resources"]["requests"]["cpu"] == "1500m"
    assert status["resources"]["limits"] == {"memory": "512Mi"}
    assert pending(server, "web") is None
    assert "allocatedResources" not in server.container("web")  # no requests of its own


def test_fit_counts_pod_level_requests_deferred_then_infeasible() -> None:
    server = FakeServer(
        engine_with_node(cpu=4000),
        pod_level("web", cpu="1"),
        make_pod("other", cpu="2500m"),
    )
    server.sync()
    resize_pod_level(server, "web", cpu="2")  # 2000 + 2500 > 4000: the pod-level amount counts
    server.sync()
    deferred = pending(server, "web")
    assert deferred is not None and deferred["reason"] == "Deferred"
    assert deferred["message"] == (
        "Node didn't have enough resource: cpu, requested: 2000, used: 2500, capacity: 4000"
    )
    resize_pod_level(server, "web", cpu="5")
    server.sync()
    infeasible = pending(server, "web")
    assert infeasible is not None and infeasible["reason"] == "Infeasible"


def test_a_pod_level_memory_limit_below_usage_stays_in_progress_with_an_error() -> None:
    engine = engine_with_node()
    server = FakeServer(engine, pod_level("web", cpu="500m", memory="128Mi", limit="512Mi"))
    engine.set_usage("default", "web", "app", UsageSeries.constant(0.1, 300 * Mi))
    server.sync()
    server.sync()
    pod = server.pods["web"]
    pod["spec"]["resources"]["limits"]["memory"] = "256Mi"
    pod["metadata"]["generation"] += 1
    server.sync()
    server.sync()
    error = server.condition("web", "PodResizeInProgress")
    assert error is not None and error["reason"] == "Error"
    assert "attempting to set pod memory limit (268435456) below current usage" in error["message"]
