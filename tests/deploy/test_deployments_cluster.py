"""deploy/ on the real API server: the shipped Deployments are accepted as written (strict
field validation), pass the restricted Pod Security Standard their namespace enforces,
and run, on simulated nodes, under the ServiceAccounts their RBAC manifests create.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.rbac import STRICT, apply_manifest
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import running_pods
from tests.deploy.manifests import COMPONENTS, shipped

NAMESPACE = "kube-tailor"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"


@pytest.fixture
def api(full_namespace: FullNamespace) -> Iterator[RawApi]:
    """The admin API, with a simulated node; the services' Deployments removed after."""
    api = full_namespace.api
    full_namespace.sim.register_node(f"deploy-{full_namespace.name}"[:63], cpu="4", memory="8Gi")
    install_crds(api)
    yield api
    for name in (*(shipped(c)["metadata"]["name"] for c in COMPONENTS), "unprivileged"):
        with contextlib.suppress(ApiException):
            api.delete(f"{DEPLOYMENTS}/{name}", {"propagationPolicy": "Foreground"})


def _budget_counted(api: RawApi, name: str) -> Json | None:
    """The budget's status once the disruption controller has counted its pods."""
    path = f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets/{name}"
    status: Json = api.get(path).get("status", {})
    return status if status.get("expectedPods") else None


def _failed_creation(api: RawApi, name: str) -> str | None:
    status = api.get(f"{DEPLOYMENTS}/{name}").get("status", {})
    for condition in status.get("conditions", []):
        if condition["type"] == "ReplicaFailure" and condition["status"] == "True":
            return str(condition["message"])
    return None


def test_the_shipped_services_run_on_their_accounts_under_restricted_pod_security(
    api: RawApi,
) -> None:
    for component in COMPONENTS:
        apply_manifest(api, f"{component}/rbac.yaml")
        apply_manifest(api, f"{component}/deployment.yaml")
    labels = api.get(f"/api/v1/namespaces/{NAMESPACE}")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"

    replicas = sum(shipped(c)["spec"]["replicas"] for c in COMPONENTS)

    def all_running() -> list[Json] | None:
        found = running_pods(api, NAMESPACE)
        return found if len(found) == replicas else None

    pods = wait_until(all_running, timeout=60, what="every replica of the three services Running")
    accounts = {p["metadata"]["labels"]["app.kubernetes.io/name"]: p for p in pods}
    for component in COMPONENTS:
        deployment = shipped(component)
        pod = accounts[deployment["metadata"]["name"]]
        spec = deployment["spec"]["template"]["spec"]
        assert pod["spec"]["serviceAccountName"] == spec["serviceAccountName"]
        assert pod["spec"]["containers"][0]["command"] == spec["containers"][0]["command"]
    for component in COMPONENTS:  # the disruption controller counts each service's replicas
        name = shipped(component)["metadata"]["name"]
        status = wait_until(
            lambda: _budget_counted(api, name),  # noqa: B023
            timeout=30,
            what=f"PodDisruptionBudget {name} counting its pods",
        )
        assert status["expectedPods"] == shipped(component)["spec"]["replicas"]
        assert status["disruptionsAllowed"] == 1
    service = api.get(f"/api/v1/namespaces/{NAMESPACE}/services/tailor-admission")
    assert service["spec"]["ports"][0]["targetPort"] == "https"


def test_a_pod_template_below_the_standard_is_refused_so_the_check_above_means_something(
    api: RawApi,
) -> None:
    apply_manifest(api, "updater/rbac.yaml")
    weaker: Json = copy.deepcopy(shipped("updater"))
    weaker["metadata"]["name"] = "unprivileged"
    selector = {"app.kubernetes.io/name": "unprivileged"}
    weaker["spec"]["selector"]["matchLabels"] = selector
    weaker["spec"]["template"]["metadata"]["labels"] = selector
    del weaker["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    api.request("POST", DEPLOYMENTS, weaker, query=STRICT)
    message = wait_until(
        lambda: _failed_creation(api, "unprivileged"), timeout=30, what="ReplicaFailure"
    )
    assert "violates PodSecurity" in message
    assert "restricted" in message

    misspelt: Json = copy.deepcopy(shipped("updater"))
    misspelt["metadata"]["name"] = "misspelt"
    misspelt["spec"]["template"]["spec"]["serviceAcountName"] = "tailor-updater"
    with pytest.raises(ApiException) as refused:
        api.request("POST", DEPLOYMENTS, misspelt, query=STRICT)
    assert refused.value.status == 400
    assert "serviceAcountName" in str(refused.value.body)
