"""Run a component as its own ServiceAccount: apply a deploy/ RBAC manifest, mint a token.

The API server runs with `--authorization-mode=RBAC`, so a component started with
such a kubeconfig can do exactly what its shipped role grants, nothing more.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import yaml
from kubernetes.client.exceptions import ApiException

from tests.cluster.controlplane import ControlPlane
from tests.cluster.rawapi import Json, RawApi

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
_RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
STRICT = {"fieldValidation": "Strict"}


def _collection(document: Json) -> str:
    kind, namespace = document["kind"], document["metadata"].get("namespace")
    plural = {
        "Namespace": "/api/v1/namespaces",
        "ServiceAccount": f"/api/v1/namespaces/{namespace}/serviceaccounts",
        "ClusterRole": f"{_RBAC_API}/clusterroles",
        "ClusterRoleBinding": f"{_RBAC_API}/clusterrolebindings",
        "Role": f"{_RBAC_API}/namespaces/{namespace}/roles",
        "RoleBinding": f"{_RBAC_API}/namespaces/{namespace}/rolebindings",
        "Service": f"/api/v1/namespaces/{namespace}/services",
        "Deployment": f"/apis/apps/v1/namespaces/{namespace}/deployments",
        "PodDisruptionBudget": f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
    }
    return plural[kind]


def apply_manifest(api: RawApi, relative: str) -> None:
    """Create every object of deploy/`relative`; one that exists already is kept (409).

    Strict field validation: a misspelt or misplaced field is refused, not dropped.
    """
    for document in yaml.safe_load_all((DEPLOY / relative).read_text()):
        try:
            api.request("POST", _collection(document), document, query=STRICT)
        except ApiException as error:
            if error.status != 409:
                raise


def kubeconfig_for(
    api: RawApi, cluster: ControlPlane, namespace: str, account: str, path: Path
) -> Path:
    """A kubeconfig holding a fresh token of ServiceAccount namespace/account (TokenRequest)."""
    accounts = f"/api/v1/namespaces/{namespace}/serviceaccounts"
    with contextlib.suppress(ApiException):
        api.create(accounts, {"metadata": {"name": account}})
    answer = api.create(f"{accounts}/{account}/token", {"spec": {"expirationSeconds": 3600}})
    server = {"server": cluster.server, "certificate-authority": str(cluster.ca_file)}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": server}],
        "users": [{"name": account, "user": {"token": answer["status"]["token"]}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": account}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def allowed(
    api: RawApi,
    namespace: str,
    account: str,
    resource: str,
    verb: str,
    subresource: str = "",
    group: str = "",
) -> bool:
    """Whether RBAC lets ServiceAccount namespace/account do `verb` (in any namespace)."""
    review: Json = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{namespace}:{account}",
            "resourceAttributes": {
                "namespace": "any",
                "group": group,
                "verb": verb,
                "resource": resource,
                "subresource": subresource,
            },
        },
    }
    answer = api.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))
