"""Pod-level resources (spec.resources) end to end on the real API server and the kubelet
simulator: the recommender's pass writes the containers' rows and the pod-level figure,
`tailor follow --recommendations` resizes the pod-level stanza in place through
`pods/resize`, the kubelet's status shows the pod-level allocation, and the webhook sizes
the replacement pod the same way; containers without their own requests keep none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from admission.patch import UPDATES_ANNOTATION
from recommender.data.prometheus import PrometheusSettings
from recommender.data.schema import empty_events
from recommender.service.history_cache import HistoryCache
from recommender.service.passes import ServiceOptions, recommend_once
from tailor.kube import Cluster
from tailor.quantity import Quantity
from tailor.scope import NamespaceScope
from tests.admission.cluster import registered, webhook
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.podtools import wait_for_pod
from tests.cluster.rawapi import Json
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import (
    create_deployment,
    running_pods,
    vpa,
    vpa_collection,
    wait_for_running,
)
from tests.updater.test_follow_recommendations import follow

Mi = 2**20
USAGE = {"app": (0.3, 200 * Mi), "side": (0.1, 100 * Mi)}  # cores, bytes: steady
# above the summed upperBounds two days of history give: upstream's rules resize it
POD_LEVEL = {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}}


def web(node: str) -> Json:
    containers = [{"name": n, "image": "registry.k8s.io/pause:3.10"} for n in USAGE]
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


def history_of(namespace: str, pod: str) -> Any:
    """Two days of both containers' usage, as Prometheus would give them."""

    def load(settings: PrometheusSettings, progress: Any, *, now: datetime) -> Any:
        times = pd.date_range(now - timedelta(days=2), now, freq="5min", inclusive="left")
        frames = [
            pd.DataFrame(
                {"timestamp": times, "namespace": namespace, "workload": "web", "pod": pod}
                | {"container": name, "cpu": cpu, "memory": float(memory)}
            )
            for name, (cpu, memory) in USAGE.items()
        ]
        return pd.concat(frames, ignore_index=True), empty_events()

    return load


def summed_targets(status: Json) -> dict[str, int]:
    """The pod-level figure: the containers' targets summed (millicores, bytes)."""
    items = status["recommendation"]["containerRecommendations"]
    return {
        "cpu": sum(Quantity.parse(i["target"]["cpu"]).milli_value() for i in items),
        "memory": sum(Quantity.parse(i["target"]["memory"]).int_value() for i in items),
    }


def amounts(values: Json) -> dict[str, int]:
    return {
        "cpu": Quantity.parse(values["cpu"]).milli_value(),
        "memory": Quantity.parse(values["memory"]).int_value(),
    }


def test_pod_level_resources_recommended_resized_in_place_and_admitted(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    node = f"podlevel-{namespace}"
    full_namespace.sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    api.create(vpa_collection(namespace), vpa("web", "web", mode="InPlaceOrRecreate"))
    create_deployment(api, namespace, web(node))
    [pod] = wait_for_running(api, namespace, 1)
    name = pod["metadata"]["name"]

    options = ServiceOptions(
        prometheus=PrometheusSettings(url="http://prometheus.invalid"),
        is_default=True,
        scope=NamespaceScope(only=namespace),
    )
    with full_namespace.cluster.api_client() as client:
        history = HistoryCache(loader=history_of(namespace, name))
        report = recommend_once(Cluster(client), options, datetime.now(UTC), history=history)
    assert report.recommended == [f"{namespace}/web"], report
    status = api.get(f"{vpa_collection(namespace)}/web")["status"]
    wanted = summed_targets(status)
    [condition] = [c for c in status["conditions"] if c["type"] == "PodLevelResources"]
    assert f"cpu {wanted['cpu']}m" in condition["message"]

    outcome = follow(full_namespace, "--recommendations")["web"]
    assert (outcome["action"], outcome["applied"]) == ("resize", True), outcome["detail"]
    resized = wait_for_pod(
        api,
        namespace,
        name,
        lambda p: (
            "resources" in p["status"] and amounts(p["status"]["resources"]["requests"]) == wanted
        ),
        what="the pod-level resize applied by the kubelet",
    )
    stanza = resized["spec"]["resources"]
    assert amounts(stanza["requests"]) == wanted
    assert amounts(stanza["limits"]) == {k: 2 * v for k, v in wanted.items()}  # ratio kept
    assert amounts(resized["status"]["allocatedResources"]) == wanted
    assert resized["metadata"]["uid"] == pod["metadata"]["uid"]
    assert resized["status"]["qosClass"] == "Burstable"
    assert all(not c.get("resources") for c in resized["spec"]["containers"])  # shared
    again = follow(full_namespace, "--recommendations")["web"]
    assert again["action"] in ("none", "wait"), again

    with webhook(full_namespace.cluster, tmp_path) as (served, cache):
        wait_until(lambda: cache.vpas(namespace), timeout=5, what="the VPA in the cache")
        with registered(api, served, namespace):
            api.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", {"gracePeriodSeconds": 0})

            def replacement() -> Json | None:
                pods = [p for p in running_pods(api, namespace) if p["metadata"]["name"] != name]
                return pods[0] if pods else None

            fresh = wait_until(replacement, timeout=30, what="the replacement pod")
    assert amounts(fresh["spec"]["resources"]["requests"]) == wanted
    assert all(not c.get("resources") for c in fresh["spec"]["containers"])
    assert "pod: cpu request" in fresh["metadata"]["annotations"][UPDATES_ANNOTATION]
