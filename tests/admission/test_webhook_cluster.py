"""`tailor admission` in front of the real API server: pods sized as they are created.

The webhook runs in-process on loopback with a certificate the API server trusts
through caBundle, registered for one test namespace only (other tests' pods never
see it), and deregistered at the end of each test. Deployments run through the real
controller-manager, so the pods arrive as the ReplicaSet controller creates them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from admission.patch import OBSERVED_CONTAINERS_ANNOTATION, UPDATES_ANNOTATION
from tests.admission.cluster import bare_pod, registered, webhook
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.rawapi import MERGE_PATCH, Json, RawApi, error_body
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import vpa_collection


def deployment(name: str, *containers: Json) -> Json:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": list(containers)}},
        },
    }


def container(name: str, resources: Json | None) -> Json:
    body: Json = {"name": name, "image": "registry.k8s.io/pause:3.10"}
    if resources is not None:
        body["resources"] = resources
    return body


def create_vpa(
    api: RawApi,
    namespace: str,
    name: str,
    mode: str,
    targets: Json,
    policies: Sequence[Json] = (),
    target: tuple[str, str] = ("apps/v1", "Deployment"),
    target_name: str | None = None,
) -> None:
    """A VPA for `target` (a Deployment) `target_name` (default `name`), with `targets`
    written through the status subresource."""
    spec: Json = {
        "targetRef": {"apiVersion": target[0], "kind": target[1], "name": target_name or name},
        "updatePolicy": {"updateMode": mode},
    }
    if policies:
        spec["resourcePolicy"] = {"containerPolicies": list(policies)}
    body = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name},
        "spec": spec,
    }
    api.create(vpa_collection(namespace), body)
    recommendations = [{"containerName": c, "target": t} for c, t in targets.items()]
    status = {"status": {"recommendation": {"containerRecommendations": recommendations}}}
    api.patch(f"{vpa_collection(namespace)}/{name}/status", status, MERGE_PATCH)


def pod_of(api: RawApi, namespace: str, app: str) -> Json:
    def created() -> Json | None:
        pods = api.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=f"app={app}")
        return pods["items"][0] if pods["items"] else None

    return wait_until(created, timeout=30, what=f"a pod of Deployment {app}")


def test_deployment_pods_are_created_with_their_vpa_recommendation_capped(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    ceiling = {"type": "Container", "max": {"memory": "300Mi"}}
    api.create(
        f"/api/v1/namespaces/{namespace}/limitranges",
        {"metadata": {"name": "ceiling"}, "spec": {"limits": [ceiling]}},
    )
    cap = {"containerName": "app", "maxAllowed": {"cpu": "600m"}}
    with webhook(full_namespace.cluster, tmp_path) as (served, cache):
        # created after the cache listed: they reach it through its watch
        create_vpa(api, namespace, "web", "Auto", {"app": {"cpu": "2", "memory": "200Mi"}}, [cap])
        create_vpa(api, namespace, "db", "Initial", {"db": {"cpu": "300m", "memory": "200Mi"}})
        wait_until(
            lambda: (
                all(v.status and v.status.recommendation for v in cache.vpas(namespace))
                and len(cache.vpas(namespace)) == 2
            ),
            timeout=2,
            what="both VPAs and their recommendations in the webhook's cache",
        )
        with registered(api, served, namespace):
            app = container(
                "app",
                {
                    "requests": {"cpu": "250m", "memory": "128Mi"},
                    "limits": {"memory": "256Mi"},
                },
            )
            sidecar = container(
                "sidecar",
                {
                    "requests": {"cpu": "10m", "memory": "16Mi"},
                    "limits": {"memory": "32Mi"},
                },
            )
            db = container(
                "db",
                {
                    "requests": {"cpu": "500m", "memory": "256Mi"},
                    "limits": {"cpu": "500m", "memory": "256Mi"},
                },
            )
            deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
            api.create(deployments, deployment("web", app, sidecar))
            api.create(deployments, deployment("db", db))
            web_pod, db_pod = pod_of(api, namespace, "web"), pod_of(api, namespace, "db")
    web = web_pod["spec"]["containers"]
    # cpu at maxAllowed; memory where its proportional limit (x2) meets the LimitRange max,
    # and the API server's own LimitRanger accepted the result.
    assert web[0]["resources"] == {
        "requests": {"cpu": "600m", "memory": "150Mi"},
        "limits": {"memory": "300Mi"},
    }
    assert web[1]["resources"] == sidecar["resources"]
    assert web_pod["metadata"]["annotations"] == {
        UPDATES_ANNOTATION: "Pod resources updated by web: container 0: memory capped to fit "
        "Max in container LimitRange, cpu capped to maxAllowed, cpu request, memory request, "
        "memory limit",
        OBSERVED_CONTAINERS_ANNOTATION: "app, sidecar",
    }
    assert web_pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    db_resources = db_pod["spec"]["containers"][0]["resources"]
    assert db_resources["requests"] == db_resources["limits"] == {"cpu": "300m", "memory": "200Mi"}
    assert db_pod["status"].get("qosClass") == "Guaranteed"


def test_pods_without_resources_get_them_and_off_or_no_vpa_stay_as_written(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    target = {"app": {"cpu": "100m", "memory": "64Mi"}}
    create_vpa(api, namespace, "bare", "Recreate", target)
    create_vpa(api, namespace, "quiet", "Off", target)
    with webhook(full_namespace.cluster, tmp_path) as (served, _):
        with registered(api, served, namespace):
            deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
            written = {"requests": {"cpu": "20m", "memory": "32Mi"}}
            api.create(deployments, deployment("bare", container("app", None)))
            api.create(deployments, deployment("quiet", container("app", written)))
            api.create(deployments, deployment("free", container("app", written)))
            pods = {app: pod_of(api, namespace, app) for app in ("bare", "quiet", "free")}
        reasons = {
            str((r.obj or {}).get("metadata", {}).get("labels", {}).get("app")): v.reason
            for r, v in served.verdicts
            if not r.dry_run and isinstance(r.obj, dict)
        }
    bare = pods["bare"]
    assert bare["spec"]["containers"][0]["resources"] == {"requests": target["app"]}
    assert bare["metadata"]["annotations"][OBSERVED_CONTAINERS_ANNOTATION] == "app"
    for app in ("quiet", "free"):
        assert pods[app]["spec"]["containers"][0]["resources"] == written
        assert "annotations" not in pods[app]["metadata"]
    # The webhook was asked about both and said why it left them alone.
    assert reasons["quiet"] == "VPA quiet has updateMode Off"
    assert reasons["free"] == "no VerticalPodAutoscaler controls it"


def test_a_cronjob_run_is_created_with_the_recommendation_of_the_cronjobs_vpa(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    """Pod -> Job -> CronJob: the Job controller creates the pod, the webhook walks up."""
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    target = {"app": {"cpu": "150m", "memory": "96Mi"}}
    create_vpa(api, namespace, "backup", "Initial", target, target=("batch/v1", "CronJob"))
    asked = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    template = {
        "metadata": {"labels": {"app": "backup"}},
        "spec": {"restartPolicy": "Never", "containers": [container("app", asked)]},
    }
    batch = f"/apis/batch/v1/namespaces/{namespace}"
    cronjob = api.create(
        f"{batch}/cronjobs",
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "backup"},
            "spec": {
                "schedule": "0 0 1 1 *",
                "suspend": True,  # the run below is made by hand, named as the controller would
                "jobTemplate": {"spec": {"template": template}},
            },
        },
    )
    owner = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "name": "backup",
        "uid": cronjob["metadata"]["uid"],
        "controller": True,
    }
    run = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "backup-29412345", "ownerReferences": [owner]},
        "spec": {"template": template},
    }
    with (
        webhook(full_namespace.cluster, tmp_path) as (served, _),
        registered(api, served, namespace),
    ):
        api.create(f"{batch}/jobs", run)
        pod = pod_of(api, namespace, "backup")
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert pod["spec"]["containers"][0]["resources"] == {"requests": target["app"]}
    assert pod["metadata"]["annotations"][UPDATES_ANNOTATION].startswith(
        "Pod resources updated by backup"
    )


def test_a_native_sidecar_is_sized_and_an_older_vpa_in_mode_off_gives_way(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    """The API server accepts the sidecar's new resources; the plain init container and
    the Off VPA (older, so upstream's rule is what picks the other) change nothing."""
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    wrong = {"app": {"cpu": "3", "memory": "1Gi"}, "proxy": {"cpu": "3", "memory": "1Gi"}}
    create_vpa(api, namespace, "web-watch", "Off", wrong, target_name="web")
    time.sleep(1.1)  # creationTimestamp has whole seconds: the Off VPA is the older one
    targets = {"app": {"cpu": "400m", "memory": "200Mi"}, "proxy": {"cpu": "60m", "memory": "48Mi"}}
    create_vpa(api, namespace, "web", "Auto", targets)
    setup = container("setup", {"requests": {"cpu": "50m", "memory": "16Mi"}})
    proxy = {
        **container(
            "proxy", {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}}
        ),
        "restartPolicy": "Always",
    }
    app = container("app", {"requests": {"cpu": "250m", "memory": "128Mi"}})
    web = deployment("web", app)
    web["spec"]["template"]["spec"]["initContainers"] = [setup, proxy]
    with (
        webhook(full_namespace.cluster, tmp_path) as (served, _),
        registered(api, served, namespace),
    ):
        api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", web)
        pod = pod_of(api, namespace, "web")
    spec = pod["spec"]
    assert spec["containers"][0]["resources"] == {"requests": targets["app"]}
    assert spec["initContainers"][0]["resources"] == setup["resources"]
    assert spec["initContainers"][1]["resources"] == {
        "requests": targets["proxy"],
        "limits": {"memory": "96Mi"},  # the 2x ratio kept
    }
    annotations = pod["metadata"]["annotations"]
    assert annotations[OBSERVED_CONTAINERS_ANNOTATION] == "app, proxy"
    assert annotations[UPDATES_ANNOTATION].startswith("Pod resources updated by web: container 0")
    assert (
        "initContainer 1: cpu request, memory request, memory limit"
        in (annotations[UPDATES_ANNOTATION])
    )


def test_a_vpa_upstream_refuses_is_refused_at_apply_and_a_bare_one_gets_its_default(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    """As upstream's admission controller: the API server answers the client with our
    message; the recommender's status writes (a subresource) are not judged."""
    api, namespace = full_namespace.api, full_namespace.name
    install_crds(api)
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    bounds = {"containerName": "app", "minAllowed": {"cpu": "2"}, "maxAllowed": {"cpu": "1"}}
    inverted: Json = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "inverted"},
        "spec": {"targetRef": target, "resourcePolicy": {"containerPolicies": [bounds]}},
    }
    bare = {**inverted, "metadata": {"name": "web"}, "spec": {"targetRef": target}}
    vpas = vpa_collection(namespace)
    with (
        webhook(full_namespace.cluster, tmp_path) as (served, _),
        registered(api, served, namespace),
    ):
        with pytest.raises(ApiException) as refused:
            api.create(vpas, inverted)
        created = api.create(vpas, bare)
        edited = {
            **created,
            "spec": {**created["spec"], "resourcePolicy": inverted["spec"]["resourcePolicy"]},
        }
        with pytest.raises(ApiException) as edit_refused:
            api.replace(f"{vpas}/web", edited)
        status = {"status": {"conditions": [{"type": "RecommendationProvided", "status": "False"}]}}
        api.patch(f"{vpas}/web/status", status, MERGE_PATCH)
    assert refused.value.status == 400
    assert (
        "denied the request: max resource for cpu is lower than min"
        in error_body(refused.value)["message"]
    )
    assert edit_refused.value.status == 400
    assert created["spec"]["updatePolicy"] == {"updateMode": "Recreate"}
    stored = api.get(f"{vpas}/web")
    assert "resourcePolicy" not in stored["spec"]
    assert stored["status"]["conditions"][0]["type"] == "RecommendationProvided"
    names = [v["metadata"]["name"] for v in api.get(vpas)["items"]]
    assert names == ["web"]


def test_pods_are_still_created_when_the_webhook_is_down(
    kube_cluster: ControlPlane, kube_api: RawApi, kube_namespace: str, tmp_path: Path
) -> None:
    with (
        webhook(kube_cluster, tmp_path) as (served, _),
        registered(kube_api, served, kube_namespace),
    ):
        served.server.stop()  # registered and called once; now nothing listens there
        created = kube_api.create(f"/api/v1/namespaces/{kube_namespace}/pods", bare_pod("after"))
    assert created["metadata"]["name"] == "after"
    assert created["spec"]["containers"][0]["resources"] == {}
    assert "annotations" not in created["metadata"]
