"""`tailor follow --recommendations`: each pod follows its VPA's own recommendation, in
place, when upstream's updater would update it (real API server, VPA statuses written
through the status subresource as any recommender writes them)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from typer.testing import CliRunner

from tailor.cli.main import app
from tailor.kube import api_client_from
from tailor.lease import ApiLease
from tailor.quantity import Quantity
from tailor.status_lease import STATUS_LEASE
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.rawapi import MERGE_PATCH, Json
from tests.cluster.workloads import (
    create_deployment,
    deployment,
    running_pods,
    vpa,
    vpa_collection,
    wait_for_running,
)
from tests.updater.following import (
    NO_WEBHOOK,
    pinned_deployment,
    wait_until_infeasible,
    webhook_renewed,
)


def recommend(api: Any, namespace: str, name: str, cpu: tuple[str, str, str]) -> None:
    """A status as a recommender writes it: cpu (lowerBound, target, upperBound), memory kept."""
    lower, target, upper = cpu
    item = {
        "containerName": "app",
        "lowerBound": {"cpu": lower, "memory": "100Mi"},
        "target": {"cpu": target, "memory": "128Mi"},
        "upperBound": {"cpu": upper, "memory": "200Mi"},
    }
    status = {"status": {"recommendation": {"containerRecommendations": [item]}}}
    api.patch(f"{vpa_collection(namespace)}/{name}/status", status, MERGE_PATCH)


def vpa_node(full_namespace: FullNamespace, prefix: str) -> str:
    """The VPA CRDs installed and a roomy simulated node for the test's Deployments."""
    install_crds(full_namespace.api)
    node = f"{prefix}-{full_namespace.name}"
    full_namespace.sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    return node


def json_outcomes(full_namespace: FullNamespace, *flags: str) -> list[Json]:
    config = str(full_namespace.cluster.kubeconfig)
    args = ["follow", "--once", "--format", "json", "--kubeconfig", config, *flags]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout))


def follow(full_namespace: FullNamespace, *flags: str) -> dict[str, Json]:
    """One pass's outcomes by workload (the last pod's, where a workload has several)."""
    return {o["workload"]: o for o in json_outcomes(full_namespace, *flags)}


def test_each_pod_follows_its_vpas_recommendation_when_upstream_would_update_it(
    full_namespace: FullNamespace,
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    node = vpa_node(full_namespace, "rec")
    vpas = vpa_collection(namespace)
    modes = {"web": "InPlaceOrRecreate", "api": "InPlace", "batch": "Recreate", "db": "InPlace"}
    for name, mode in modes.items():
        api.create(vpas, vpa(name, name, mode=mode))
        create_deployment(api, namespace, deployment(name, node))  # each asks for 250m
    wait_for_running(api, namespace, 4)
    recommend(api, namespace, "web", ("400m", "600m", "900m"))  # 250m is below lowerBound
    recommend(api, namespace, "api", ("200m", "300m", "400m"))  # 250m is within the bounds
    recommend(api, namespace, "batch", ("400m", "600m", "900m"))

    outcomes = follow(full_namespace, "--recommendations")
    web = outcomes["web"]
    assert (web["action"], web["applied"]) == ("resize", True), web
    assert outcomes["api"]["detail"] == "within its VPA's recommendation (upstream's update rules)"
    assert outcomes["batch"]["action"] == "none"  # Recreate is updated by eviction only
    assert outcomes["batch"]["detail"] == (
        "app cpu request below the recommendation's lowerBound; updateMode Recreate needs --evict"
    )
    assert outcomes["db"]["detail"] == "its VPA has no recommendation yet"
    pods = {p["metadata"]["labels"]["app"]: p for p in running_pods(api, namespace)}
    requests = pods["web"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests["cpu"] == "600m"
    assert Quantity.parse(requests["memory"]) == Quantity.parse("128Mi")  # unchanged
    assert pods["api"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"

    # out of scope, nothing is considered (upstream's --ignored-vpa-object-namespaces)
    assert (
        follow(full_namespace, "--recommendations", f"--ignored-vpa-object-namespaces={namespace}")
        == {}
    )
    assert follow(full_namespace, "--recommendations", "--vpa-object-namespace=elsewhere") == {}

    again = follow(full_namespace, "--recommendations")
    assert again["web"]["action"] in ("none", "wait")  # at its target: within the bounds now


def test_a_resize_the_kubelet_cannot_make_falls_back_to_eviction_within_the_restriction(
    full_namespace: FullNamespace,
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    web = vpa("web", "web", mode="InPlaceOrRecreate")
    only_down = [{"resources": ["cpu"], "changeRequirement": "TargetLowerThanRequests"}]
    web["spec"]["updatePolicy"]["evictionRequirements"] = only_down
    api.create(vpa_collection(namespace), web)
    pods = pinned_deployment(full_namespace, "pinned", 2)
    recommend(api, namespace, "web", ("1500m", "2", "3"))

    first = follow(full_namespace, "--recommendations", "--evict")
    assert first["web"]["action"] == "resize"
    wait_until_infeasible(api, namespace, pods)
    # the target (2 cores) is above what the containers run with (1): not evicted for a rise
    refused = json_outcomes(full_namespace, "--recommendations", "--evict", NO_WEBHOOK)
    assert [o["action"] for o in refused] == ["none", "none"], refused
    assert all("evictionRequirements are not met" in o["detail"] for o in refused)
    only_up = [{"resources": ["cpu"], "changeRequirement": "TargetHigherThanRequests"}]
    policy = {"spec": {"updatePolicy": {"evictionRequirements": only_up}}}
    api.patch(f"{vpa_collection(namespace)}/web", policy, MERGE_PATCH)

    # the specs now ask for the target, but the kubelet refused: one replica is evicted
    outcomes = json_outcomes(full_namespace, "--recommendations", "--evict", NO_WEBHOOK)
    assert sorted((o["action"], o["applied"]) for o in outcomes) == [
        ("evict", True),
        ("none", True),
    ]
    [kept] = [o for o in outcomes if o["action"] == "none"]
    assert "1 of 2 replicas already evicted this pass" in kept["detail"]


def test_recreate_pods_off_their_recommendation_are_evicted_within_the_restriction(
    full_namespace: FullNamespace,
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    node = vpa_node(full_namespace, "recreate")
    api.create(vpa_collection(namespace), vpa("web", "web", mode="Recreate"))
    web = deployment("web", node)
    web["spec"]["replicas"] = 2
    create_deployment(api, namespace, web)
    pods = wait_for_running(api, namespace, 2)
    recommend(api, namespace, "web", ("400m", "600m", "900m"))  # 250m: below lowerBound

    # the webhook sizes the replacement: while its status Lease is stale, nothing is evicted
    lease = webhook_renewed(full_namespace.cluster, namespace)
    aged = ApiLease(api_client_from(full_namespace.cluster.kubeconfig), namespace, STATUS_LEASE)
    found = aged.read()
    assert found is not None
    two_minutes_ago = datetime.now(UTC) - timedelta(minutes=2)
    assert aged.replace(replace(found[0], renew_time=two_minutes_ago), found[1])
    waiting = json_outcomes(full_namespace, "--recommendations", "--evict", lease)
    assert [o["action"] for o in waiting] == ["none", "none"], waiting
    assert all("status Lease" in o["detail"] and "was last renewed 0:02:" in o["detail"]
               for o in waiting)  # fmt: skip
    webhook_renewed(full_namespace.cluster, namespace)
    outcomes = json_outcomes(full_namespace, "--recommendations", "--evict", lease)
    assert sorted((o["action"], o["applied"]) for o in outcomes) == [
        ("evict", True),
        ("none", True),
    ]  # never resized in place; one of two replicas per pass (upstream's tolerance)
    [evicted] = [o for o in outcomes if o["action"] == "evict"]
    assert evicted["detail"] == (
        "evicted: app cpu request below the recommendation's lowerBound; updateMode Recreate"
    )
    names = {p["metadata"]["name"] for p in pods}
    assert evicted["pod"] in names
    for pod in running_pods(api, namespace):  # nothing was resized
        assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"


def test_recommendations_exclude_a_schedule() -> None:
    result = CliRunner().invoke(
        app, ["follow", "--once", "--recommendations", "--schedule-configmap", "a/b"]
    )
    assert result.exit_code == 2
