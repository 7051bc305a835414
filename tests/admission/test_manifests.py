"""deploy/admission/: the webhook works on its role, nothing more; its registration is valid."""

from __future__ import annotations

import base64
import string
from pathlib import Path

import pytest
import yaml

from admission.admit import admit
from admission.cluster_cache import ClusterCache
from admission.review import parse_review
from tailor.api.crd import GROUP as VPA_GROUP
from tailor.kube import ClusterError, api_client_from
from tests.admission.cluster import WEBHOOKS
from tests.admission.https import serving_pair
from tests.admission.test_admit import review
from tests.admission.test_webhook_cluster import container, create_vpa, deployment, pod_of
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import create_namespace, namespace_name
from tests.cluster.rawapi import RawApi
from tests.cluster.rbac import allowed, apply_manifest, kubeconfig_for
from tests.cluster.waiting import wait_until

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "admission"
ACCOUNT = "tailor-admission"


def test_the_webhook_reads_what_it_needs_on_the_shipped_role_and_nothing_more(
    kube_cluster_full: ControlPlane,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    namespace = namespace_name(request.node.name)
    with kube_cluster_full.api_client() as client:
        api = RawApi(client)
        install_crds(api)
        apply_manifest(api, "admission/rbac.yaml")
        create_namespace(api, namespace)
        create_vpa(api, namespace, "web", "Auto", {"app": {"cpu": "1"}})
        app = container("app", {"requests": {"cpu": "100m"}})
        api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", app))
        pod = pod_of(api, namespace, "web")  # as written: no webhook is registered here

        config = kubeconfig_for(
            api, kube_cluster_full, "kube-tailor", ACCOUNT, tmp_path / "admission"
        )
        cache = ClusterCache(api_client_from(config))
        cache.refresh()
        assert [v.name for v in cache.vpas(namespace)] == ["web"]
        del pod["metadata"]["name"]
        verdict = admit(parse_review(review(pod, namespace=namespace)), cache)
        assert verdict.reason.startswith("Pod resources updated by web"), verdict
        assert verdict.warnings == ()

        cache.start()  # watching on the role: a new VPA and LimitRange arrive within seconds
        try:
            create_vpa(api, namespace, "db", "Initial", {"db": {"cpu": "1"}})
            ceiling = {"type": "Container", "max": {"memory": "1Gi"}}
            api.create(
                f"/api/v1/namespaces/{namespace}/limitranges",
                {"metadata": {"name": "ceiling"}, "spec": {"limits": [ceiling]}},
            )
            wait_until(
                lambda: (
                    [v.name for v in cache.vpas(namespace)] == ["db", "web"]
                    and len(cache.limit_ranges(namespace)) == 1
                ),
                timeout=2,
                what="the watched VPA and LimitRange",
            )
        finally:
            cache.stop()
        assert "cannot watch" not in caplog.text  # not seen through relists after a 403

        # An HPA with no metrics scales on CPU (autoscaling/v2's default): CPU is its own.
        hpas = f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers"
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
        api.create(hpas, {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": target,
                                                                "maxReplicas": 3}})  # fmt: skip
        fresh = ClusterCache(api_client_from(config))
        fresh.refresh()
        held = admit(parse_review(review(pod, namespace=namespace)), fresh)
        assert held.reason == (
            "VPA web: recommendation already in place; "
            "left to the HPA: HPA web scales on cpu (Resource metric)"
        ), held
        assert not [op for op in held.operations if op["path"].startswith("/spec")]

        for resource, verb in (("pods", "list"), ("pods", "update"), ("replicasets", "list")):
            assert not allowed(api, "kube-tailor", ACCOUNT, resource, verb)  # core group
        for resource, group in (("replicasets", "apps"), ("jobs", "batch")):
            for verb in ("get", "list", "watch"):
                assert allowed(api, "kube-tailor", ACCOUNT, resource, verb, group=group)
            assert not allowed(api, "kube-tailor", ACCOUNT, resource, "update", group=group)
        hpa = ("horizontalpodautoscalers", "autoscaling")
        for verb in ("list", "watch"):
            assert allowed(api, "kube-tailor", ACCOUNT, hpa[0], verb, group=hpa[1])
        for verb in ("get", "update"):
            assert not allowed(api, "kube-tailor", ACCOUNT, hpa[0], verb, group=hpa[1])
        for resource, group in (("verticalpodautoscalers", VPA_GROUP), ("limitranges", "")):
            for verb in ("list", "watch"):
                assert allowed(api, "kube-tailor", ACCOUNT, resource, verb, group=group)
            for verb in ("get", "update", "delete"):
                assert not allowed(api, "kube-tailor", ACCOUNT, resource, verb, group=group)
        nobody = kubeconfig_for(
            api, kube_cluster_full, "kube-tailor", "tailor-nobody", tmp_path / "nobody"
        )
        with pytest.raises(ClusterError, match="forbidden"):
            ClusterCache(api_client_from(nobody)).refresh()
        # HPAs it may not list: sized as before it knew of HPAs, and said in the log
        assert ClusterCache(api_client_from(nobody)).hpas(namespace) == []
        # its Pending pod would otherwise run on the next test's node, in that test's pass
        api.delete(f"/api/v1/namespaces/{namespace}")


def test_the_role_grants_exactly_the_lists_watches_and_gets_the_webhook_makes() -> None:
    [role] = [
        d
        for d in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text())
        if d["kind"] == "ClusterRole"
    ]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},  # PodSized
        {
            "apiGroups": [VPA_GROUP],
            "resources": ["verticalpodautoscalers"],
            "verbs": ["list", "watch"],
        },
        {"apiGroups": [""], "resources": ["limitranges"], "verbs": ["list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["autoscaling"],
            "resources": ["horizontalpodautoscalers"],
            "verbs": ["list", "watch"],
        },
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},  # node groups
    ]


def test_the_registration_template_is_accepted_by_the_api_server(
    kube_api: RawApi, tmp_path: Path
) -> None:
    template = string.Template((DEPLOY / "webhook.yaml").read_text())
    assert template.get_identifiers() == ["CA_BUNDLE"]
    ca, _ = serving_pair(tmp_path)
    text = template.substitute(CA_BUNDLE=base64.b64encode(ca.cert_pem).decode())
    stored = kube_api.request("POST", WEBHOOKS, yaml.safe_load(text), query={"dryRun": "All"})
    [hook] = stored["webhooks"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["sideEffects"] == "None"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["rules"][0]["operations"] == ["CREATE"]
    assert hook["rules"][0]["resources"] == ["pods"]
    assert hook["clientConfig"]["service"]["path"] == "/mutate"
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == ca.cert_pem
