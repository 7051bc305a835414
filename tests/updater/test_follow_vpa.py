"""`tailor follow --vpa`: VPA objects (our CRD, installed in the real API server) decide.

Three Deployments share one schedule: `web`'s VPA asks for InPlaceOrRecreate and
caps CPU, `api`'s VPA is Off, `batch` has none. A LimitRange bounds every
container's memory limit, and the resize must satisfy the API server's own
LimitRanger, not just our reading of it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import create_namespace, namespace_name
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.waiting import wait_until
from tests.updater.test_follow_cluster import Mi, follow, period, write_schedule

GROUP_PATH = "/apis/autoscaling.k8s.io/v1"


def deployment(name: str, node: str) -> Json:
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {
            "requests": {"cpu": "250m", "memory": "128Mi"},
            "limits": {"memory": "256Mi"},
        },
    }
    labels = {"app": name}
    spec = {"containers": [container], "nodeSelector": {"tailor-test": node}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def vpa(name: str, mode: str, policy: Json | None = None) -> Json:
    spec: Json = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "updatePolicy": {"updateMode": mode},
    }
    if policy:
        spec["resourcePolicy"] = {"containerPolicies": [policy]}
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name},
        "spec": spec,
    }


def memory_ceiling() -> Json:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "ceiling"},
        "spec": {"limits": [{"type": "Container", "max": {"memory": "300Mi"}}]},
    }


def test_only_pods_whose_vpa_asks_for_in_place_updates_are_resized_within_their_bounds(
    kube_cluster_full: ControlPlane,
    kubelet_sim_factory: Callable[..., KubeletSimulator],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    sim = kubelet_sim_factory(kube_cluster_full)
    namespace = namespace_name(request.node.name)
    with kube_cluster_full.api_client() as client:
        api = RawApi(client)
        install_crds(api)
        create_namespace(api, namespace)
        api.create(f"/api/v1/namespaces/{namespace}/limitranges", memory_ceiling())
        node = f"vpa-{namespace}"
        sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
        vpas = f"{GROUP_PATH}/namespaces/{namespace}/verticalpodautoscalers"
        cap = {"containerName": "*", "maxAllowed": {"cpu": "600m"}}
        api.create(vpas, vpa("web", "InPlaceOrRecreate", cap))
        api.create(vpas, vpa("api", "Off"))
        for name in ("web", "api", "batch"):
            api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment(name, node))

        def running() -> list[Json]:
            pods = api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
            ok = [p for p in pods if p["status"].get("phase") == "Running"]
            return ok if len(ok) == 3 else []

        wait_until(running, timeout=30, what="three replicas Running")
        rows = [period(namespace, name, 1.0, 200 * Mi) for name in ("web", "api", "batch")]
        schedule = write_schedule(tmp_path / "s.json", rows)

        outcomes = {o["workload"]: o for o in follow(kube_cluster_full, schedule, "--vpa")}
        assert outcomes["api"]["action"] == "none"
        assert outcomes["api"]["detail"] == "VPA api has updateMode Off: no in-place updates"
        assert outcomes["batch"]["detail"] == "no VerticalPodAutoscaler controls it"
        web = outcomes["web"]
        assert (web["action"], web["applied"]) == ("resize", True), web
        assert "capped to maxAllowed" in web["detail"]

        pods = {p["metadata"]["labels"]["app"]: p for p in running()}
        resources = pods["web"]["spec"]["containers"][0]["resources"]
        # CPU at the VPA's maxAllowed; memory where the proportional limit meets the ceiling.
        assert resources["requests"] == {"cpu": "600m", "memory": "150Mi"}
        assert resources["limits"] == {"memory": "300Mi"}
        untouched = pods["api"]["spec"]["containers"][0]["resources"]["requests"]
        assert untouched == {"cpu": "250m", "memory": "128Mi"}

        # Without --vpa every scheduled pod follows, still within the LimitRange.
        plain = {o["workload"]: o for o in follow(kube_cluster_full, schedule)}
        assert plain["batch"]["action"] == "resize" and plain["batch"]["applied"]
        batch = next(p for p in running() if p["metadata"]["labels"]["app"] == "batch")
        batch_resources = batch["spec"]["containers"][0]["resources"]
        assert batch_resources["requests"] == {"cpu": "1", "memory": "150Mi"}
