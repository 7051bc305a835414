"""`tailor recommender` against the real API server and a real Prometheus.

Two days of a Deployment's history are backfilled, its afternoon peaks throttled by a
CPU limit; the service must write the same recommendation the library computes from
that history (on usage + throttled time, or usage alone with --ignore-throttling)
into the status of the VPA that names it, clamped to that VPA's policy, leave a VPA
naming another recommender alone, and say NoPodsMatched where no pod runs.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.recommend import recommend_vpa
from recommender.vpa.model import VpaModel
from recommender.vpa.settings import VpaSettings
from tailor.api.checkpoint import VerticalPodAutoscalerCheckpoint
from tailor.api.meta import ResourceList
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.cli.main import app
from tailor.quantity import cpu_cores
from tailor.schedule_file import aware_time, parse_schedule
from tests.cli_text import plain
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.rawapi import RawApi
from tests.cluster.rbac import apply_manifest, kubeconfig_for
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import (
    VPA_API,
    create_deployment,
    daily_cycle,
    deployment,
    running_pods,
    vpa,
    vpa_collection,
)
from tests.deploy.manifests import command, option, replace_option
from tests.recommender.service.served import serve_a_pod_without_history

pytestmark = pytest.mark.prometheus


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["recommender", *args])


def written_as(document: Any, expected: Any) -> VerticalPodAutoscaler:
    """The VPA, once its one container's uncapped target is the library's `expected` row."""
    found = VerticalPodAutoscaler.from_api(document)
    assert found.status is not None and found.status.recommendation is not None
    [written] = found.status.recommendation.container_recommendations or []
    wanted = ResourceList.from_amounts(expected["cpu_target"], expected["memory_target"])
    assert written.uncapped_target == wanted
    return found


def test_the_service_writes_the_libraries_recommendation_into_the_vpas_it_serves(
    full_namespace: FullNamespace,
    prometheus_server: PrometheusFactory,
    tmp_path: Path,
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    history = daily_cycle(namespace, backfill_end())
    # Under a 1-core limit the afternoon peak was throttled: the time held back is demand.
    history["cpu_limit"] = 1.0
    history["cpu_throttled"] = (history["cpu"] - 1.0).clip(lower=0)
    history["cpu"] = history["cpu"].clip(upper=1.0)
    url = prometheus_server.start(usage_to_openmetrics(history)).url
    install_crds(api)
    node = f"rec-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    for name in ("web", "api"):
        create_deployment(api, namespace, deployment(name, node))
    vpas = vpa_collection(namespace)
    cap = {"containerName": "app", "maxAllowed": {"cpu": "900m"}}
    # InPlaceOrRecreate: the shipped updater (--vpa) resizes only pods that ask for it
    api.create(
        vpas, vpa("web", "web", mode="InPlaceOrRecreate", recommender="kube-tailor", policy=cap)
    )
    api.create(vpas, vpa("api", "api", recommender="someone-else"))
    api.create(vpas, vpa("idle", "ghost", recommender="kube-tailor"))
    wait_until(
        lambda: len(api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]) == 2,
        timeout=30,
        what="two pods",
    )
    # a VPA naming web's ReplicaSet rather than the Deployment above it matches no pod
    [web_rs] = api.get(
        f"/apis/apps/v1/namespaces/{namespace}/replicasets", labelSelector="app=web"
    )["items"]
    child = vpa("child", "web", recommender="kube-tailor")
    child["spec"]["targetRef"] = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                  "name": web_rs["metadata"]["name"]}  # fmt: skip
    api.create(vpas, child)
    # Both passes run as the shipped ServiceAccount, under the real RBAC authorizer.
    apply_manifest(api, "recommender/rbac.yaml")
    account = kubeconfig_for(
        api, full_namespace.cluster, "kube-tailor", "tailor-recommender", tmp_path / "sa"
    )
    kubeconfig = str(account)
    result = run("--once", "--prometheus", url, "--history", "5d", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result.output
    # the pass is cluster-wide: VPAs other tests delete mid-pass are refused, not ours
    assert f"refused: {namespace}/" not in result.stdout
    assert f"recommended: {namespace}/web" in result.stdout
    assert "checkpoints: 1 written" in result.stdout
    # upstream's ConfigUnsupported messages, read under the shipped RBAC
    assert (
        f"unsupported targetRef: {namespace}/idle: Cannot read targetRef. Reason: "
        f"Deployment {namespace}/ghost not found"
    ) in result.stdout
    assert f"unsupported targetRef: {namespace}/child: The targetRef controller has a parent" in (
        result.stdout
    )
    assert "targetRef not checked" not in result.stdout
    elsewhere = run("--once", "--prometheus", url, "--history", "5d", "--kubeconfig", kubeconfig,
                    "--ignored-vpa-object-namespaces", namespace)  # fmt: skip
    assert elsewhere.exit_code == 0, elsewhere.output
    assert namespace not in elsewhere.stdout  # its VPAs are out of scope

    web = VerticalPodAutoscaler.from_api(api.get(f"{vpas}/web"))
    assert web.status is not None and web.status.recommendation is not None
    first = web.status.condition("RecommendationProvided")
    assert first is not None and first.last_transition_time is not None
    [written] = web.status.recommendation.container_recommendations or []
    [expected] = recommend_vpa(history).to_dict(orient="records")
    wanted = ResourceList.from_amounts(expected["cpu_target"], expected["memory_target"])
    assert expected["cpu_target"] > 0.9  # so the cap binds
    assert written.container_name == "app"
    assert written.uncapped_target == wanted
    assert written.target == ResourceList({"cpu": "900m", "memory": wanted["memory"]})
    provided = web.status.condition("RecommendationProvided")
    assert provided is not None and provided.status == "True"
    assert (provided.message or "").startswith("app: its CPU limit throttled it in")

    # --ignore-throttling: upstream's view, usage alone, the request held near the limit
    result = run("--once", "--prometheus", url, "--history", "5d", "--kubeconfig", kubeconfig,
                 "--ignore-throttling")  # fmt: skip
    assert result.exit_code == 0, result.output
    [unseen] = recommend_vpa(history, count_throttling=False).to_dict(orient="records")
    assert unseen["cpu_target"] < expected["cpu_target"]
    web = written_as(api.get(f"{vpas}/web"), unseen)
    assert web.status is not None
    quiet = web.status.condition("RecommendationProvided")
    assert quiet is not None and not quiet.message

    # upstream's model with other settings (--vpa-set): the same numbers as the library's
    tuned = VpaSettings(target_percentile=0.5, safety_margin=0.0)
    settings = ["--vpa-set", "target_percentile=0.5", "--vpa-set", "safety_margin=0"]
    result = run(
        "--once", "--prometheus", url, "--history", "5d", "--kubeconfig", kubeconfig, *settings
    )
    assert result.exit_code == 0, result.output
    [lower] = recommend_vpa(history, settings=tuned).to_dict(orient="records")
    assert lower["cpu_target"] < expected["cpu_target"]
    written_as(api.get(f"{vpas}/web"), lower)

    assert api.get(f"{vpas}/api").get("status") is None  # another recommender's VPA
    idle = VerticalPodAutoscaler.from_api(api.get(f"{vpas}/idle"))
    assert idle.status is not None and idle.status.recommendation is None
    matched = idle.status.condition("NoPodsMatched")
    assert matched is not None and matched.status == "True"
    unsupported = idle.status.condition("ConfigUnsupported")
    assert unsupported is not None and unsupported.status == "True"
    assert (
        unsupported.message
        == f"Cannot read targetRef. Reason: Deployment {namespace}/ghost not found"
    )
    web_status = VerticalPodAutoscaler.from_api(api.get(f"{vpas}/web")).status
    assert web_status is not None and web_status.condition("ConfigUnsupported") is None

    checkpoints = f"{VPA_API}/namespaces/{namespace}/verticalpodautoscalercheckpoints"
    saved = VerticalPodAutoscalerCheckpoint.from_api(api.get(f"{checkpoints}/web-app"))
    assert saved.spec is not None and saved.spec.vpa_object_name == "web"
    assert saved.status is not None and saved.status.total_samples_count == len(history)
    resumed = VpaModel(np.array([0]))
    resumed.load_checkpoint(0, api.get(f"{checkpoints}/web-app")["status"])
    assert resumed.sample_count[0] == len(history)

    # The checkpoint of a VPA that is gone is deleted, as upstream's GC does; ours stays.
    orphan = {**api.get(f"{checkpoints}/web-app"), "metadata": {"name": "gone-app"}}
    orphan["spec"] = {**orphan["spec"], "vpaObjectName": "gone"}
    api.create(checkpoints, orphan)
    result = run("--once", "--prometheus", url, "--history", "5d", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result.output
    assert "checkpoints: 1 deleted (their VPA is gone)" in result.stdout
    names = [c["metadata"]["name"] for c in api.get(checkpoints)["items"]]
    assert names == ["web-app"]

    # The shipped Deployment's command (deploy/recommender), pointed at this Prometheus.
    shipped = replace_option(command("recommender"), "--prometheus", url)
    plan = option(shipped, "--schedule-configmap")
    once = ["--once", "--history", "5d", "--kubeconfig", str(account)]
    result = CliRunner().invoke(app, [*shipped, *once])
    assert result.exit_code == 0, result.output
    # the pass is cluster-wide: VPAs other tests delete mid-pass are refused, not ours
    assert f"refused: {namespace}/" not in result.stdout
    text = api.get(f"/api/v1/namespaces/{plan.replace('/', '/configmaps/')}")["data"][
        "schedule.json"
    ]
    rows = parse_schedule(text, "configmap")
    assert len(rows) == 25  # the hour in force, then the next 24
    assert {(r.namespace, r.workload, r.container) for r in rows} == {(namespace, "web", "app")}
    assert json.loads(text)[0]["cpu"] == rows[0].cpu
    # --leader-elect: the one pass took the Lease (under the shipped RBAC) and released it
    lease = api.get("/apis/coordination.k8s.io/v1/namespaces/kube-tailor/leases/tailor-recommender")
    assert lease["spec"]["holderIdentity"] == ""
    # `kubectl describe vpa web` says why: the forecast's explanation, in the API's own field
    [provided] = [
        c for c in api.get(f"{vpas}/web")["status"]["conditions"]
        if c["type"] == "RecommendationProvided"
    ]  # fmt: skip
    assert provided["status"] == "True"
    assert provided["message"].startswith("app: cpu: daily cycle")
    # still True since the first pass: its transition time stays (the message may change)
    assert aware_time(provided["lastTransitionTime"]) == first.last_transition_time

    # The loop in the cluster: the updater follows that ConfigMap, as its own ServiceAccount.
    apply_manifest(api, "updater/rbac.yaml")
    updater = kubeconfig_for(
        api, full_namespace.cluster, "kube-tailor", "tailor-updater", tmp_path / "updater"
    )
    moment = datetime.now(UTC)
    [due] = [r for r in rows if r.start <= moment < r.end]
    once = ["--once", "--format", "json", "--at", moment.isoformat(), "--kubeconfig", str(updater)]
    result = CliRunner().invoke(app, [*command("updater"), *once])  # deploy/updater's command
    assert result.exit_code == 0, result.output
    [outcome] = json.loads(result.stdout)
    assert (outcome["workload"], outcome["action"], outcome["applied"]) == ("web", "resize", True)
    [pod] = [p for p in running_pods(api, namespace) if p["metadata"]["labels"]["app"] == "web"]
    cpu = pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    wanted_cpu = math.ceil(due.cpu * 1000 - 1e-9) / 1000  # type: ignore[operator]
    assert cpu_cores(cpu) == min(wanted_cpu, 0.9)  # the VPA's maxAllowed binds under --vpa


def test_bad_flags_and_an_unreachable_prometheus_are_clear_errors(
    kube_cluster: ControlPlane, kube_api: RawApi, kube_namespace: str
) -> None:
    result = run("--once", "--prometheus", "http://127.0.0.1:9", "--schedule-configmap", "a/b")
    assert result.exit_code == 2
    assert "a schedule needs --strategy forecast" in plain(result.output)
    result = run(
        "--once", "--prometheus", "http://127.0.0.1:9", "--strategy", "forecast",
        "--schedule-configmap", "no-slash",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "want NAMESPACE/NAME" in plain(result.output)
    for flags, message in (
        (["--strategy", "forecast", "--vpa-set", "safety_margin=0"], "goes with --strategy vpa"),
        (["--vpa-set", "no_such=1"], "unknown vpa setting"),
    ):
        result = run("--once", "--prometheus", "http://127.0.0.1:9", *flags)
        assert result.exit_code == 2
        assert message in plain(result.output)

    serve_a_pod_without_history(kube_api, kube_namespace)
    kubeconfig = str(kube_cluster.kubeconfig)
    result = run("--once", "--prometheus", "http://127.0.0.1:9", "--kubeconfig", kubeconfig)
    assert result.exit_code == 1
    assert "cannot reach Prometheus at http://127.0.0.1:9" in plain(result.output)
    assert (
        kube_api.get(f"{VPA_API}/namespaces/{kube_namespace}/verticalpodautoscalers/rs").get(
            "status"
        )
        is None
    )  # nothing written on a failed pass
