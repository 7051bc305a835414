"""A CPU startup boost (upstream's AEP-7862) end to end, on the real API server.

The webhook (in-process, registered for this namespace) boosts the pod of a Deployment
whose VPA asks for it; `tailor follow --recommendations` leaves the pod boosted until it
has been Ready for the hold, then resizes it back in place to the CPU it was admitted
with (capped by the VPA's policy as it stands then), and from then on the normal rules
apply.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tailor.cli.main import app
from tailor.startup_boost import BOOST_ANNOTATION
from tests.admission.cluster import registered, webhook
from tests.admission.test_webhook_cluster import create_vpa, pod_of
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.podtools import applied_requests, wait_for_pod
from tests.cluster.rawapi import MERGE_PATCH
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import create_deployment, deployment, vpa_collection
from tests.updater.following import NO_WEBHOOK

HOLD_SECONDS = 4


def follow(full_namespace: FullNamespace) -> list[dict[str, Any]]:
    config = str(full_namespace.cluster.kubeconfig)
    args = ["follow", "--once", "--recommendations", "--format", "json", "--kubeconfig", config]
    result = CliRunner().invoke(app, [*args, "-n", full_namespace.name, NO_WEBHOOK])
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout))


def test_the_pod_starts_boosted_and_is_resized_back_once_ready_for_the_hold(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    node = f"boost-{namespace}"
    full_namespace.sim.register_node(node, cpu="8", memory="8Gi", labels={"tailor-test": node})
    create_vpa(api, namespace, "web", "InPlaceOrRecreate", {"app": {"cpu": "200m"}})
    boost = {"cpu": {"type": "Factor", "factor": 3, "duration": f"{HOLD_SECONDS}s"}}
    api.patch(f"{vpa_collection(namespace)}/web", {"spec": {"startupBoost": boost}}, MERGE_PATCH)
    resources = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m"}}
    with webhook(full_namespace.cluster, tmp_path) as (served, cache):
        wait_until(
            lambda: any(v.spec.startup_boost for v in cache.vpas(namespace)),
            timeout=5,
            what="the VPA's boost in the webhook's cache",
        )
        with registered(api, served, namespace):
            create_deployment(api, namespace, deployment("web", node, resources))
            created = pod_of(api, namespace, "web")
    name = created["metadata"]["name"]
    # 3 x the recommendation (200m), and the limit in proportion (x 2, then x 3)
    container = created["spec"]["containers"][0]["resources"]
    assert container["requests"]["cpu"] == "600m" and container["limits"]["cpu"] == "1200m"
    assert json.loads(created["metadata"]["annotations"][BOOST_ANNOTATION])["containers"] == {
        "app": {"request": "600m", "limit": "1200m", "baseRequest": "200m", "baseLimit": "400m"}
    }
    pods = f"/api/v1/namespaces/{namespace}/pods"
    wait_for_pod(
        api,
        namespace,
        name,
        lambda p: any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions") or []
        ),
        what="Ready",
    )
    [held] = follow(full_namespace)
    assert held["action"] == "none" and held["detail"].startswith("startup CPU boost until ")
    assert f"(Ready + 0:00:0{HOLD_SECONDS})" in held["detail"]
    time.sleep(HOLD_SECONDS + 1)

    # the boost ends under the VPA's policy as it stands, like every write
    policy = {"containerPolicies": [{"containerName": "app", "maxAllowed": {"cpu": "150m"}}]}
    api.patch(f"{vpa_collection(namespace)}/web", {"spec": {"resourcePolicy": policy}}, MERGE_PATCH)
    [ended] = follow(full_namespace)
    assert (ended["action"], ended["applied"]) == ("resize", True), ended
    assert ended["detail"].startswith("startup CPU boost over; ")
    assert "cpu capped to maxAllowed" in ended["detail"]
    resized = api.get(f"{pods}/{name}")["spec"]["containers"][0]["resources"]
    assert resized["requests"]["cpu"] == "150m" and resized["limits"]["cpu"] == "300m"
    assert api.get(f"{pods}/{name}")["metadata"]["uid"] == created["metadata"]["uid"]

    wait_for_pod(
        api,
        namespace,
        name,
        lambda p: (
            (applied_requests(p) or {}).get("cpu") == "150m"
            and not any(
                c["type"] == "PodResizeInProgress" for c in p["status"].get("conditions") or []
            )
        ),
        what="the unboost applied by the kubelet",
    )
    [after] = follow(full_namespace)  # no longer boosted: upstream's rules, and it is on target
    assert after["action"] == "none" and "startup" not in after["detail"], after
