"""The webhook's Events on the real API server: each pod it sized, said on its VPA (a
Deployment's pod has no name yet when it is admitted: the Event names its generateName)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.admission.cluster import registered, webhook
from tests.admission.test_webhook_cluster import container, create_vpa, deployment, pod_of
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.waiting import wait_until


def test_a_pod_sized_at_creation_is_told_on_its_vpa(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    create_vpa(api, namespace, "web", "Recreate", {"app": {"cpu": "100m", "memory": "64Mi"}})
    with (
        webhook(full_namespace.cluster, tmp_path, events=True) as (served, _),
        registered(api, served, namespace),
    ):
        api.create(
            f"/apis/apps/v1/namespaces/{namespace}/deployments",
            deployment("web", container("app", None)),
        )
        pod = pod_of(api, namespace, "web")

        def told() -> list[dict[str, Any]] | None:
            listed = api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
            found = [e for e in listed if e["reason"] == "PodSized"]
            return found or None

        [event] = wait_until(told, timeout=30, what="the PodSized Event")
    assert event["involvedObject"]["kind"] == "VerticalPodAutoscaler"
    assert event["involvedObject"]["name"] == "web"
    assert event["type"] == "Normal"
    assert event["source"] == {"component": "kube-tailor-admission"}
    generated = pod["metadata"]["generateName"]
    assert event["message"].startswith(f"Pod {generated}* sized by kube-tailor: ")
