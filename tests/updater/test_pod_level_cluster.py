"""Pod-level resources (spec.resources) end to end on the real API server and the kubelet
simulator: the webhook sizes the pod-level stanza at creation, `tailor follow
--recommendations` resizes it in place through `pods/resize`, and the kubelet's status
shows the pod-level allocation; containers without their own requests keep none."""

from __future__ import annotations

from pathlib import Path

from admission.patch import UPDATES_ANNOTATION
from tests.admission.cluster import registered, webhook
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.podtools import wait_for_pod
from tests.cluster.rawapi import MERGE_PATCH, Json, RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import create_deployment, vpa, vpa_collection, wait_for_running
from tests.updater.test_follow_recommendations import follow

POD_LEVEL = {
    "requests": {"cpu": "1", "memory": "1Gi"},
    "limits": {"cpu": "2", "memory": "2Gi"},
}


def recommend(api: RawApi, namespace: str, app: tuple[str, str], side: tuple[str, str]) -> None:
    """Targets (cpu, memory) for both containers, bounds 20 % around them."""

    def item(name: str, cpu: str, memory: str) -> Json:
        return {
            "containerName": name,
            "lowerBound": {"cpu": cpu, "memory": memory},
            "target": {"cpu": cpu, "memory": memory},
            "upperBound": {"cpu": cpu, "memory": memory},
        }

    items = [item("app", *app), item("side", *side)]
    status = {"status": {"recommendation": {"containerRecommendations": items}}}
    api.patch(f"{vpa_collection(namespace)}/web/status", status, MERGE_PATCH)


def web(node: str) -> Json:
    containers = [{"name": n, "image": "registry.k8s.io/pause:3.10"} for n in ("app", "side")]
    labels = {"app": "web"}
    spec = {"containers": containers, "resources": POD_LEVEL, "nodeSelector": {"tailor-test": node}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def test_pod_level_resources_are_sized_at_admission_and_resized_in_place(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    node = f"podlevel-{namespace}"
    full_namespace.sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    api.create(vpa_collection(namespace), vpa("web", "web", mode="InPlaceOrRecreate"))
    recommend(api, namespace, ("300m", "200Mi"), ("100m", "100Mi"))
    with webhook(full_namespace.cluster, tmp_path) as (served, cache):
        wait_until(lambda: cache.vpas(namespace), timeout=5, what="the VPA in the cache")
        with registered(api, served, namespace):
            create_deployment(api, namespace, web(node))
            [pod] = wait_for_running(api, namespace, 1)
    spec = pod["spec"]
    assert spec["resources"] == {
        "requests": {"cpu": "400m", "memory": "300Mi"},
        "limits": {"cpu": "800m", "memory": "600Mi"},
    }
    assert all(not c.get("resources") for c in spec["containers"])  # they share the pod's
    assert "pod: cpu request" in pod["metadata"]["annotations"][UPDATES_ANNOTATION]
    assert pod["status"]["qosClass"] == "Burstable"

    recommend(api, namespace, ("600m", "300Mi"), ("100m", "100Mi"))
    outcome = follow(full_namespace, "--recommendations")["web"]
    assert (outcome["action"], outcome["applied"]) == ("resize", True), outcome["detail"]
    name = pod["metadata"]["name"]
    resized = wait_for_pod(
        api,
        namespace,
        name,
        lambda p: (p["status"].get("resources") or {}).get("requests", {}).get("cpu") == "700m",
        what="the pod-level resize applied by the kubelet",
    )
    assert resized["spec"]["resources"]["requests"] == {"cpu": "700m", "memory": "400Mi"}
    assert resized["spec"]["resources"]["limits"] == {"cpu": "1400m", "memory": "800Mi"}
    assert resized["status"]["allocatedResources"] == {"cpu": "700m", "memory": "400Mi"}
    assert resized["metadata"]["uid"] == pod["metadata"]["uid"]
    assert all(not c.get("resources") for c in resized["spec"]["containers"])

    again = follow(full_namespace, "--recommendations")["web"]
    assert again["action"] in ("none", "wait"), again
