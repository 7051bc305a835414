"""A VPA coordinated with the HPA on its CPU (real API server, controller-manager running).

The VPA opts in (`kube-tailor.io/coordinate-hpa: "true"`); its recommendation doubles
the pods' CPU request. One `tailor follow --recommendations` pass, as the updater's
shipped ServiceAccount, resizes the CPU the HPA scales on and rewrites the HPA's
target from 70 % to 35 %, so the scale-out point stays at 175m per pod; the rewrite
is said in an Event on the HPA and in the VPA's condition. A second pass changes
nothing; a target the HPA's owner then changes becomes the new baseline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tailor.cli.main import app
from tailor.hpa_coordination import (
    BASELINE_ANNOTATION,
    COORDINATE_ANNOTATION,
    COORDINATED_CONDITION,
)
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.rawapi import MERGE_PATCH, Json
from tests.cluster.rbac import apply_manifest, kubeconfig_for
from tests.cluster.workloads import (
    create_deployment,
    deployment,
    hpa,
    hpa_collection,
    running_pods,
    vpa,
    vpa_collection,
    wait_for_running,
)
from tests.updater.test_follow_recommendations import recommend


def follow(kubeconfig: Path) -> Any:
    args = ["follow", "--once", "--recommendations", "--kubeconfig", str(kubeconfig)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result


def utilization(hpa_object: Json) -> int:
    [metric] = hpa_object["spec"]["metrics"]
    return int(metric["resource"]["target"]["averageUtilization"])


def test_the_hpa_target_follows_the_cpu_request_so_scale_out_stays_put(
    full_namespace: FullNamespace, tmp_path: Path
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    install_crds(api)
    node = f"coord-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    manifest = vpa("web", "web", mode="InPlace")
    manifest["metadata"]["annotations"] = {COORDINATE_ANNOTATION: "true"}
    vpas, hpas = vpa_collection(namespace), hpa_collection(namespace)
    api.create(vpas, manifest)
    api.create(hpas, hpa("web", "web", "cpu"))  # 70 % of the template's 250m: 175m per pod
    create_deployment(api, namespace, deployment("web", node))
    wait_for_running(api, namespace, 1)
    recommend(api, namespace, "web", ("400m", "500m", "900m"))
    apply_manifest(api, "updater/rbac.yaml")
    account = kubeconfig_for(
        api, full_namespace.cluster, "kube-tailor", "tailor-updater", tmp_path / "sa"
    )

    result = follow(account)
    said = "cpu target 70% of 250m -> 35% of 500m: scale-out at 175m per pod"
    assert f"HPA target rewritten: {namespace}/web: HPA web: {said}" in result.output
    [pod] = running_pods(api, namespace)
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m"
    written = api.get(f"{hpas}/web")
    assert utilization(written) == 35
    baseline = json.loads(written["metadata"]["annotations"][BASELINE_ANNOTATION])
    assert baseline == {"cpu": {"owner": 70, "written": 35}}
    conditions = {c["type"]: c for c in api.get(f"{vpas}/web")["status"]["conditions"]}
    assert conditions[COORDINATED_CONDITION]["message"] == f"HPA web: {said}"
    events = api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    on_hpa = [  # the HPA controller's own (no metrics API here) may come too
        e
        for e in events
        if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
        and e["source"].get("component") == "kube-tailor-updater"
    ]
    assert [e["reason"] for e in on_hpa] == ["HPATargetRewritten"]
    assert on_hpa[0]["message"] == f"HPA web: {said}"

    follow(account)  # nothing moved: the HPA is not written again
    assert (
        api.get(f"{hpas}/web")["metadata"]["resourceVersion"]
        == written["metadata"]["resourceVersion"]
    )

    # its owner sets 80 %: that is the new baseline, kept in absolute terms (200m per pod)
    owner = {"spec": {"metrics": written["spec"]["metrics"]}}
    owner["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] = 80
    api.patch(f"{hpas}/web", owner, MERGE_PATCH)
    result = follow(account)
    assert "cpu target 80% of 250m -> 40% of 500m: scale-out at 200m per pod" in result.output
    rewritten = api.get(f"{hpas}/web")
    assert utilization(rewritten) == 40
    baseline = json.loads(rewritten["metadata"]["annotations"][BASELINE_ANNOTATION])
    assert baseline == {"cpu": {"owner": 80, "written": 40}}
