"""`tailor recommender` reports an HPA fighting a VPA over cpu (the real API server).

A Deployment with a VPA in mode Recreate and an autoscaling/v2 HPA on its CPU
utilization: the pass still writes the recommendation, and sets the condition
HorizontalAutoscalerConflict naming the HPA; it turns False once the HPA is gone or
the VPA only recommends, and is left out (the pass still succeeds) when the
recommender's role cannot list HPAs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from tailor.cli.main import app
from tailor.schedule_file import aware_time
from tests.cli_text import plain
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.rbac import DEPLOY, apply_manifest, kubeconfig_for
from tests.cluster.workloads import (
    create_deployment,
    daily_cycle,
    deployment,
    hpa,
    hpa_collection,
    vpa,
    vpa_collection,
    wait_for_running,
)

pytestmark = pytest.mark.prometheus
CONFLICT = "HorizontalAutoscalerConflict"
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["recommender", *args])


def conditions(api: RawApi, path: str) -> dict[str, Json]:
    return {c["type"]: c for c in api.get(path)["status"]["conditions"]}


def role_without_hpas(api: RawApi, account: str) -> None:
    """The shipped recommender ClusterRole minus its HPA rule, bound to `account`."""
    documents = yaml.safe_load_all((DEPLOY / "recommender/rbac.yaml").read_text())
    [role] = [d for d in documents if d["kind"] == "ClusterRole"]
    rules = [r for r in role["rules"] if r["resources"] != ["horizontalpodautoscalers"]]
    assert len(rules) == len(role["rules"]) - 1
    api.create(f"{RBAC_API}/clusterroles", {"metadata": {"name": account}, "rules": rules})
    subject = {"kind": "ServiceAccount", "name": account, "namespace": "kube-tailor"}
    binding = {
        "metadata": {"name": account},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": account,
        },
        "subjects": [subject],
    }
    api.create(f"{RBAC_API}/clusterrolebindings", binding)


def test_an_hpa_on_the_vpas_cpu_is_a_condition_until_it_is_gone(
    full_namespace: FullNamespace,
    prometheus_server: PrometheusFactory,
    tmp_path: Path,
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    url = prometheus_server.start(usage_to_openmetrics(daily_cycle(namespace, backfill_end()))).url
    install_crds(api)
    node = f"hpa-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    create_deployment(api, namespace, deployment("web", node))
    vpas, hpas = vpa_collection(namespace), hpa_collection(namespace)
    api.create(vpas, vpa("web", "web", mode="Recreate", recommender="kube-tailor"))
    api.create(hpas, hpa("web", "web", "cpu"))
    wait_for_running(api, namespace, 1)
    apply_manifest(api, "recommender/rbac.yaml")
    account = kubeconfig_for(
        api, full_namespace.cluster, "kube-tailor", "tailor-recommender", tmp_path / "sa"
    )
    once = ["--once", "--prometheus", url, "--history", "5d", "--kubeconfig", str(account)]

    result = run(*once)
    assert result.exit_code == 0, result.output
    assert f"recommended: {namespace}/web" in result.stdout  # still recommended
    reason = "HPA web scales on cpu (Resource metric)"
    assert f"HPA conflict: {namespace}/web: {reason}" in result.stdout
    conflict = conditions(api, f"{vpas}/web")[CONFLICT]
    assert (conflict["status"], conflict["message"]) == ("True", reason)
    since = aware_time(conflict["lastTransitionTime"])

    # one namespace (--vpa-object-namespace): the HPAs are listed there, same answer
    result = run(*once, "--vpa-object-namespace", namespace)
    assert result.exit_code == 0, result.output
    assert conditions(api, f"{vpas}/web")[CONFLICT]["message"] == reason

    # an HPA without metrics: the API server fills in autoscaling/v2's default, 80 % CPU
    api.create(hpas, hpa("plain", "web"))
    default = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}
    assert api.get(f"{hpas}/plain")["spec"]["metrics"] == [
        {"type": "Resource", "resource": default}
    ]
    assert run(*once).exit_code == 0
    conflict = conditions(api, f"{vpas}/web")[CONFLICT]
    assert conflict["message"] == f"HPA plain scales on cpu (Resource metric); {reason}"
    assert aware_time(conflict["lastTransitionTime"]) == since  # still True

    # the HPAs gone: False, no message, a new transition time
    api.delete(f"{hpas}/web")
    api.delete(f"{hpas}/plain")
    assert run(*once).exit_code == 0
    conflict = conditions(api, f"{vpas}/web")[CONFLICT]
    assert conflict["status"] == "False" and "message" not in conflict
    assert aware_time(conflict["lastTransitionTime"]) >= since

    # an HPA on memory, but the VPA only recommends (updateMode Off): no fight
    api.create(hpas, hpa("memory", "web", "memory"))
    merge = "application/merge-patch+json"
    api.patch(f"{vpas}/web", {"spec": {"updatePolicy": {"updateMode": "Off"}}}, merge)
    assert run(*once).exit_code == 0
    assert conditions(api, f"{vpas}/web")[CONFLICT]["status"] == "False"
    api.patch(f"{vpas}/web", {"spec": {"updatePolicy": {"updateMode": "InPlaceOrRecreate"}}}, merge)
    assert run(*once).exit_code == 0
    conflict = conditions(api, f"{vpas}/web")[CONFLICT]
    assert conflict["message"] == "HPA memory scales on memory (Resource metric)"

    # a role without HPAs (403): the pass still writes the recommendation, without the condition
    role_without_hpas(api, f"no-hpa-{namespace}")
    blind = kubeconfig_for(
        api, full_namespace.cluster, "kube-tailor", f"no-hpa-{namespace}", tmp_path / "blind"
    )
    result = run(*once[:-1], str(blind))
    assert result.exit_code == 0, result.output
    assert f"recommended: {namespace}/web" in result.stdout
    said = plain(result.output)
    assert "HPA conflicts not checked: cannot read horizontalpodautoscalers" in said
    assert "forbidden" in said
    written = conditions(api, f"{vpas}/web")
    assert CONFLICT not in written and written["RecommendationProvided"]["status"] == "True"
