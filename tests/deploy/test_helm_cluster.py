"""The chart on the real API server with the real helm: a bad value installs nothing; the
documented install (the namespace created and labelled first, then `helm install`) runs the
three services on a simulated node under restricted Pod Security, leaving the namespace's
labels as they were; `helm uninstall` removes what the chart made and keeps the namespace.

Namespace kube-tailor is shared with test_deployments_cluster.py and the services' own
cluster tests (plain manifests, kept objects): this test starts from and leaves no
kube-tailor objects at all, waiting until the namespace is really gone.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tests.cluster.certs import CertificateAuthority
from tests.cluster.fixtures import FullNamespace
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import running_pods
from tests.deploy.helm import CHART, NAMESPACE, RELEASE, Helm
from tests.deploy.manifests import COMPONENTS, shipped

RBAC = "/apis/rbac.authorization.k8s.io/v1"
WEBHOOK = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
NAMESPACE_PATH = f"/api/v1/namespaces/{NAMESPACE}"
# what the chart (and the plain manifests) create outside the namespace
CLUSTER_SCOPED = [
    *(f"{RBAC}/clusterroles/kube-tailor-{c}" for c in COMPONENTS),
    *(f"{RBAC}/clusterrolebindings/kube-tailor-{c}" for c in COMPONENTS),
    f"{WEBHOOK}kube-tailor-admission",
]


def _gone(api: RawApi, path: str) -> bool:
    try:
        api.get(path)
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


def remove_kube_tailor(api: RawApi) -> None:
    """Delete every kube-tailor object (the namespace with all in it) and wait until gone.

    Workloads and pods go first, the pods at once: pods another test left terminating on
    a node whose simulator has stopped would hold the namespace's deletion for a minute.
    """
    apps = f"/apis/apps/v1/namespaces/{NAMESPACE}"
    for collection in (f"{apps}/deployments", f"{apps}/replicasets"):
        with contextlib.suppress(ApiException):
            api.delete(collection)
    with contextlib.suppress(ApiException):
        api.request("DELETE", f"{NAMESPACE_PATH}/pods", query={"gracePeriodSeconds": "0"})
    for path in [*CLUSTER_SCOPED, NAMESPACE_PATH]:
        with contextlib.suppress(ApiException):
            api.delete(path)
    for path in [*CLUSTER_SCOPED, NAMESPACE_PATH]:  # a namespace still terminating refuses 409
        wait_until(lambda: _gone(api, path), timeout=120, interval=0.5, what=f"{path} deleted")  # noqa: B023


@pytest.fixture
def cluster(full_namespace: FullNamespace, tmp_path: Path) -> Iterator[tuple[RawApi, Path]]:
    """The admin API and kubeconfig of the full cluster, a simulated node, no kube-tailor
    objects before; after: the release uninstalled (if the test failed half-way) and
    every kube-tailor object removed."""
    api = full_namespace.api
    full_namespace.sim.register_node(f"helm-{full_namespace.name}"[:63], cpu="4", memory="8Gi")
    remove_kube_tailor(api)
    yield api, full_namespace.cluster.kubeconfig
    remove_kube_tailor(api)


def may(api: RawApi, account: str, verb: str, configmap: str) -> bool:
    """Whether the real RBAC authorizer lets ServiceAccount `account` `verb` the ConfigMap."""
    attributes = {"namespace": NAMESPACE, "verb": verb, "resource": "configmaps"}
    if configmap:
        attributes["name"] = configmap
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{NAMESPACE}:{account}",
            "resourceAttributes": attributes,
        },
    }
    answer = api.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))


def released(helm: Helm, kubeconfig: Path) -> list[str]:
    done = helm.run("list", "--namespace", NAMESPACE, "--all", "-q", kubeconfig=kubeconfig)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_helm_installs_the_services_that_run_and_uninstalls_them(
    helm: Helm, cluster: tuple[RawApi, Path], tmp_path: Path
) -> None:
    api, kubeconfig = cluster
    # the namespace first: helm keeps its release record there before creating anything
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    api.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE, "labels": labels}})
    install = ["install", RELEASE, str(CHART), "--namespace", NAMESPACE]

    refused = helm.run(*install, "--set", "recommender.strategy=magic", kubeconfig=kubeconfig)
    assert refused.returncode != 0
    assert "/recommender/strategy" in refused.stderr
    assert released(helm, kubeconfig) == []
    assert api.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments")["items"] == []
    assert all(_gone(api, path) for path in CLUSTER_SCOPED)

    ca = CertificateAuthority(tmp_path / "ca")
    bundle = base64.b64encode(ca.cert_pem).decode()
    done = helm.run(*install, "--set", f"admission.caBundle={bundle}", kubeconfig=kubeconfig)
    assert done.returncode == 0, done.stderr
    assert "kube-tailor 0.1.0 is installed in namespace kube-tailor" in done.stdout  # NOTES
    assert released(helm, kubeconfig) == [RELEASE]

    kept = api.get(NAMESPACE_PATH)["metadata"]
    assert kept["labels"] == {**labels, "kubernetes.io/metadata.name": NAMESPACE}  # not adopted
    assert "meta.helm.sh/release-name" not in kept.get("annotations", {})
    [hook] = api.get(f"{WEBHOOK}kube-tailor-admission")["webhooks"]
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == ca.cert_pem

    replicas = sum(shipped(c)["spec"]["replicas"] for c in COMPONENTS)  # the chart's defaults

    def all_running() -> list[Json] | None:
        found = running_pods(api, NAMESPACE)
        return found if len(found) == replicas else None

    pods = wait_until(all_running, timeout=90, what="every replica of the services Running")
    manifest = helm.run("get", "manifest", RELEASE, "-n", NAMESPACE, kubeconfig=kubeconfig)
    deployments = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]
        for d in yaml.safe_load_all(manifest.stdout)
        if d and d["kind"] == "Deployment"
    }
    assert set(deployments) == {f"tailor-{c}" for c in COMPONENTS}
    for pod in pods:
        spec = deployments[pod["metadata"]["labels"]["app.kubernetes.io/name"]]
        assert pod["spec"]["serviceAccountName"] == spec["serviceAccountName"]
        assert pod["spec"]["containers"][0]["command"] == spec["containers"][0]["command"]
        assert pod["spec"]["nodeName"].startswith("helm-")

    # the one schedule ConfigMap: written by the recommender, read by the updater, no other
    assert may(api, "tailor-recommender", "create", "tailor-schedule")  # created by name
    assert not may(api, "tailor-recommender", "create", "")
    assert may(api, "tailor-recommender", "patch", "tailor-schedule")
    assert not may(api, "tailor-recommender", "patch", "kube-root-ca.crt")
    assert may(api, "tailor-updater", "get", "tailor-schedule")
    assert not may(api, "tailor-updater", "get", "kube-root-ca.crt")
    assert not may(api, "tailor-updater", "patch", "tailor-schedule")

    gone = helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, kubeconfig=kubeconfig)
    assert gone.returncode == 0, gone.stderr
    for path in CLUSTER_SCOPED:
        wait_until(lambda: _gone(api, path), timeout=90, interval=0.5, what=f"{path} uninstalled")  # noqa: B023
    collection = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
    wait_until(lambda: not api.get(collection)["items"], timeout=90, what="Deployments removed")
    assert api.get(NAMESPACE_PATH)["metadata"]["labels"] == kept["labels"]  # the user's, kept
