"""The shipped RBAC on the real API server grants each ServiceAccount exactly the rights
`tests/deploy/rights.py` lists: nothing extra, nothing missing.

Each account asks the API server itself what it may do (SelfSubjectRulesReview, with a
token of its own) in a namespace of no project object (its ClusterRoles' rights) and in the
project's namespace (its Roles' rights, too). The rights every authenticated account has
(discovery, self reviews) are those of an account with no role, and left out. The plain
manifests and the chart's render are each applied under a namespace and names of their own,
so neither sees the other's (or another test's) bindings.
"""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tailor.kube import api_client_from
from tests.cluster.controlplane import ControlPlane
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.rbac import kubeconfig_for
from tests.deploy.helm import Helm
from tests.deploy.manifests import COMPONENTS, documents
from tests.deploy.rights import ACCOUNTS, HOME, REGISTRATION_RIGHTS, Grant, Right, expected

RBAC_KINDS = {
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
}
_RBAC = "/apis/rbac.authorization.k8s.io/v1"
_COLLECTIONS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ClusterRole": f"{_RBAC}/clusterroles",
    "ClusterRoleBinding": f"{_RBAC}/clusterrolebindings",
    "Role": f"{_RBAC}/namespaces/{{ns}}/roles",
    "RoleBinding": f"{_RBAC}/namespaces/{{ns}}/rolebindings",
}


def relocated(objects: list[Json], home: str, suffix: str) -> list[Json]:
    """The RBAC objects of `objects` moved from HOME to `home`, cluster-wide names suffixed
    (a ClusterRole and its binding's roleRef alike): the same rules, apart from any other."""
    # the namespace first: the chart leaves the release namespace to whoever installs it
    moved: list[Json] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": home}}]
    for original in objects:
        if original["kind"] not in RBAC_KINDS or original["kind"] == "Namespace":
            continue
        document: Any = copy.deepcopy(original)
        metadata = document["metadata"]
        if document["kind"] == "Namespace":
            metadata["name"] = home
        if metadata.get("namespace") == HOME:
            metadata["namespace"] = home
        if document["kind"].startswith("Cluster"):
            metadata["name"] += suffix
        if document["kind"].endswith("Binding"):
            if document["roleRef"]["kind"] == "ClusterRole":
                document["roleRef"]["name"] += suffix
            for subject in document["subjects"]:
                subject["namespace"] = (
                    home if subject["namespace"] == HOME else subject["namespace"]
                )
        moved.append(document)
    return moved


def apply(api: RawApi, objects: list[Json]) -> None:
    for document in objects:
        path = _COLLECTIONS[document["kind"]].format(ns=document["metadata"].get("namespace"))
        try:
            api.request("POST", path, document, query={"fieldValidation": "Strict"})
        except ApiException as error:
            if error.status != 409:
                raise


def granted(client_api: RawApi, namespace: str) -> set[Grant]:
    """What the calling account may do in `namespace`, as (group, resource, verb, name)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    }
    answer = client_api.create("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", review)
    assert not answer["status"].get("incomplete"), answer["status"]
    return {
        (group, resource, verb, name)
        for rule in answer["status"]["resourceRules"]
        for group in rule.get("apiGroups") or [""]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in rule.get("resourceNames") or ["*"]
    }


def rights_of(
    api: RawApi, cluster: ControlPlane, home: str, account: str, tmp: Path
) -> tuple[set[Grant], set[Grant]]:
    """(rights in a namespace holding nothing of ours, rights added in `home`), less what
    any authenticated account may do."""
    config = kubeconfig_for(api, cluster, home, account, tmp / f"{account}.kubeconfig")
    nobody = kubeconfig_for(api, cluster, home, "tailor-nobody", tmp / "nobody.kubeconfig")
    elsewhere = f"elsewhere-{uuid.uuid4().hex[:6]}"
    with api_client_from(config) as client, api_client_from(nobody) as baseline:
        everyone = granted(RawApi(baseline), elsewhere) | granted(RawApi(baseline), home)
        anywhere = granted(RawApi(client), elsewhere) - everyone
        at_home = granted(RawApi(client), home) - everyone - anywhere
    return anywhere, at_home


def check_accounts(
    api: RawApi, cluster: ControlPlane, home: str, tmp: Path, accounts: dict[str, list[Right]]
) -> None:
    for account, rights in accounts.items():
        anywhere, at_home = rights_of(api, cluster, home, account, tmp)
        want_anywhere, want_home = expected(rights)
        assert anywhere - want_anywhere == set(), f"{account}: extra cluster-wide rights"
        assert want_anywhere - anywhere == set(), f"{account}: missing cluster-wide rights"
        assert at_home - want_home == set(), f"{account}: extra rights in {home}"
        assert want_home - at_home == set(), f"{account}: missing rights in {home}"


def test_the_plain_manifests_grant_each_account_exactly_its_listed_rights(
    kube_api: RawApi, kube_cluster: ControlPlane, tmp_path: Path
) -> None:
    home = f"rbac-plain-{uuid.uuid4().hex[:6]}"
    shipped = [d for c in COMPONENTS for d in documents(f"{c}/rbac.yaml")]
    apply(kube_api, relocated(shipped, home, f"-{home}"))
    check_accounts(kube_api, kube_cluster, home, tmp_path, ACCOUNTS)

    # the optional registration RBAC adds exactly its own object's get and patch
    apply(kube_api, relocated(documents("admission/registration-rbac.yaml"), home, f"-{home}"))
    registering = {"tailor-admission": ACCOUNTS["tailor-admission"] + REGISTRATION_RIGHTS}
    check_accounts(kube_api, kube_cluster, home, tmp_path, registering)


@pytest.mark.parametrize(
    "values", [[], ["--set", "admission.registerWebhook=true", "--set", "updater.evict=true"]]
)
def test_the_charts_render_grants_each_account_exactly_its_listed_rights(
    helm: Helm, kube_api: RawApi, kube_cluster: ControlPlane, tmp_path: Path, values: list[str]
) -> None:
    home = f"rbac-chart-{uuid.uuid4().hex[:6]}"
    rendered = [d for d in yaml.safe_load_all(helm.template(*values).stdout) if d]
    assert rendered
    apply(kube_api, relocated(rendered, home, f"-{home}"))
    accounts = dict(ACCOUNTS)
    if values:
        accounts["tailor-admission"] = ACCOUNTS["tailor-admission"] + REGISTRATION_RIGHTS
    check_accounts(kube_api, kube_cluster, home, tmp_path, accounts)


def test_a_right_beyond_the_list_fails_the_check(
    kube_api: RawApi, kube_cluster: ControlPlane, tmp_path: Path
) -> None:
    """The check catches what it is for: one extra verb on an extra Lease."""
    home = f"rbac-extra-{uuid.uuid4().hex[:6]}"
    shipped = documents("updater/rbac.yaml")
    extra = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "extra", "namespace": HOME},
        "rules": [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]}
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "extra", "namespace": HOME},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extra"},
        "subjects": [{"kind": "ServiceAccount", "name": "tailor-updater", "namespace": HOME}],
    }
    apply(kube_api, relocated([*shipped, extra, binding], home, f"-{home}"))
    with pytest.raises(AssertionError, match="extra rights in"):
        check_accounts(
            kube_api, kube_cluster, home, tmp_path, {"tailor-updater": ACCOUNTS["tailor-updater"]}
        )
