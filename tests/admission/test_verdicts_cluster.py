"""Verdicts reused for identical pods, and decided again once a watch brings a change: the
webhook's cache of the real API server (its VPA, LimitRange and ReplicaSet watches)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.admission.burst import owner, review_body
from tests.admission.cluster import webhook
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.rawapi import MERGE_PATCH, RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import vpa_collection

SEEN = 5.0  # seconds a change may take to reach the cache through its watch


def recommend(api: RawApi, namespace: str, cpu: str) -> None:
    target = {"containerName": "app", "target": {"cpu": cpu, "memory": "300Mi"}}
    status = {"status": {"recommendation": {"containerRecommendations": [target]}}}
    api.patch(f"{vpa_collection(namespace)}/app0/status", status, MERGE_PATCH)


def patched_cpu(answer: dict[str, Any]) -> str | None:
    """The cpu request the answer's patch writes (None: no patch)."""
    if "patch" not in answer["response"]:
        return None
    operations = json.loads(base64.b64decode(answer["response"]["patch"]))
    [cpu] = [op["value"] for op in operations if op["path"].endswith("/requests/cpu")]
    return str(cpu)


def test_identical_pods_reuse_a_verdict_until_the_vpa_or_a_limit_range_changes(
    kube_cluster: ControlPlane, kube_api: RawApi, kube_namespace: str, tmp_path: Path
) -> None:
    install_crds(kube_api)
    namespace = kube_namespace
    link = owner("Deployment", "app0", "d0")
    spec = {"replicas": 0, "selector": {"matchLabels": {"app": "app0"}},
            "template": {"metadata": {"labels": {"app": "app0"}},
                         "spec": {"containers": [{"name": "app", "image": "x"}]}}}  # fmt: skip
    kube_api.create(
        f"/apis/apps/v1/namespaces/{namespace}/replicasets",
        {"metadata": {"name": "app0-rs", "ownerReferences": [link]}, "spec": spec},
    )
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app0"}
    vpa_spec = {"targetRef": target, "updatePolicy": {"updateMode": "Initial"}}
    vpa = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
           "metadata": {"name": "app0"}, "spec": vpa_spec}  # fmt: skip
    kube_api.create(vpa_collection(namespace), vpa)
    recommend(kube_api, namespace, "300m")
    body = review_body(0, namespace=namespace)  # one pod's review, sent again and again

    with webhook(kube_cluster, tmp_path) as (served, cache):
        verdicts = served.server.app.verdicts
        assert verdicts is not None

        def answer() -> dict[str, Any]:
            status, text = served.post("/mutate", body)
            assert status == 200
            return dict(json.loads(text))

        def cpu_seen(cpu: str) -> bool:
            return any(
                (r := v.recommendation()) is not None
                and str((r.container_recommendations or [])[0].target["cpu"]) == cpu
                for v in cache.vpas(namespace)
            )

        wait_until(lambda: cpu_seen("300m"), timeout=SEEN, what="the VPA in the cache")
        assert [patched_cpu(answer()) for _ in range(3)] == ["300m"] * 3
        assert verdicts.reused == 2

        recommend(kube_api, namespace, "500m")
        wait_until(lambda: cpu_seen("500m"), timeout=SEEN, what="the new recommendation")
        assert patched_cpu(answer()) == "500m"

        floor = {"type": "Container", "min": {"cpu": "600m"}}
        kube_api.create(
            f"/api/v1/namespaces/{namespace}/limitranges",
            {"metadata": {"name": "floor"}, "spec": {"limits": [floor]}},
        )
        wait_until(lambda: cache.limit_ranges(namespace), timeout=SEEN, what="the LimitRange")
        assert patched_cpu(answer()) == "600m"

        kube_api.patch(
            f"{vpa_collection(namespace)}/app0",
            {"spec": {"updatePolicy": {"updateMode": "Off"}}},
            MERGE_PATCH,
        )
        wait_until(
            lambda: all(v.effective_update_mode() == "Off" for v in cache.vpas(namespace)),
            timeout=SEEN,
            what="updateMode Off in the cache",
        )
        assert patched_cpu(answer()) is None
        assert verdicts.reused == 2  # each change decided afresh
