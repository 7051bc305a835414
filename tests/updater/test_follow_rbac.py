"""deploy/updater/rbac.yaml grants `tailor follow` what it needs (the real RBAC authorizer)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tailor.cli.main import app
from tests.cli_text import plain
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.rbac import allowed, apply_manifest, kubeconfig_for
from tests.cluster.workloads import (
    Mi,
    create_deployment,
    deployment,
    running_pods,
    vpa,
    vpa_collection,
    wait_for_running,
)
from tests.updater.following import period, write_schedule

ACCOUNT_NAMESPACE = "kube-tailor"


def test_the_updater_runs_on_the_shipped_role_and_not_without_it(
    full_namespace: FullNamespace,
    tmp_path: Path,
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    install_crds(api)
    apply_manifest(api, "updater/rbac.yaml")
    node = f"rbac-{namespace}"
    sim.register_node(node, cpu="4", memory="8Gi", labels={"tailor-test": node})
    create_deployment(api, namespace, deployment("web", node))
    api.create(vpa_collection(namespace), vpa("web", "web", mode="InPlaceOrRecreate"))
    wait_for_running(api, namespace, 1)
    schedule = write_schedule(tmp_path / "s.json", [period(namespace, "web", 0.5, 128 * Mi)])
    updater = kubeconfig_for(
        api, full_namespace.cluster, ACCOUNT_NAMESPACE, "tailor-updater", tmp_path / "updater"
    )
    args = ["follow", "--once", "--vpa", "--evict", "--format", "json"]
    result = CliRunner().invoke(
        app, [*args, "--schedule", str(schedule), "--kubeconfig", str(updater)]
    )
    assert result.exit_code == 0, result.output
    assert '"action": "resize"' in result.stdout and '"applied": true' in result.stdout
    [pod] = running_pods(api, namespace)
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m"
    assert allowed(api, ACCOUNT_NAMESPACE, "tailor-updater", "pods", "create", "eviction")
    assert not allowed(
        api, ACCOUNT_NAMESPACE, "tailor-updater", "pods", "update"
    )  # resize only, no pod edits

    nobody = kubeconfig_for(
        api, full_namespace.cluster, ACCOUNT_NAMESPACE, "tailor-nobody", tmp_path / "nobody"
    )
    result = CliRunner().invoke(
        app, ["follow", "--once", "--schedule", str(schedule), "--kubeconfig", str(nobody)]
    )
    assert result.exit_code == 1
    assert "cannot read pods" in plain(result.output)
    assert "forbidden" in plain(result.output)
