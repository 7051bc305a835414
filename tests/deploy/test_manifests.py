"""deploy/: the shipped Deployments, Service and Dockerfile fit together and fit the CLI.

What the API server itself checks (schema, Pod Security, RBAC) is tested on the real
one in test_deployments_cluster.py; this is what only the files can tell.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import typer

from tailor.cli.main import app
from tailor.status_lease import STATUS_LEASE
from tailor.telemetry import DEFAULT_PORTS
from tests.deploy.manifests import (
    COMPONENTS,
    ROOT,
    command,
    container,
    documents,
    option,
    replace_option,
    shipped,
)

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def parse(args: list[str]) -> typer.Context:
    """Parse `tailor ARGS` as the CLI would, without running it: a bad flag raises."""
    group = typer.main.get_command(app)
    root = typer.Context(group, info_name="tailor")
    name, subcommand, rest = group.resolve_command(root, args)  # type: ignore[attr-defined]
    assert subcommand is not None, f"no command {name}"
    context: typer.Context = subcommand.make_context(name, rest, parent=root)
    return context


def dockerfile() -> list[tuple[str, list[str]]]:
    """(instruction, arguments) of the Dockerfile, comments and blank lines dropped."""
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    rows = [line.split(None, 1) for line in lines if line.strip() and not line.startswith("#")]
    return [(word.upper(), shlex.split(rest)) for word, rest in rows]


@pytest.mark.parametrize("component", COMPONENTS)
def test_each_shipped_command_is_one_the_cli_accepts(component: str) -> None:
    context = parse(command(component))
    assert context.command.name == {"updater": "follow"}.get(component, component)


def test_the_cli_parse_would_catch_a_misspelt_flag() -> None:
    with pytest.raises(Exception, match="No such option: --vpaa"):
        parse([*command("updater"), "--vpaa"])
    with pytest.raises(typer.BadParameter, match="valid integer"):
        parse(replace_option(command("admission"), "--port", "http"))


@pytest.mark.parametrize("component", COMPONENTS)
def test_each_deployment_runs_on_the_account_its_rbac_grants_and_the_released_image(
    component: str,
) -> None:
    deployment = shipped(component)
    spec = deployment["spec"]["template"]["spec"]
    accounts = {
        (d["metadata"]["namespace"], d["metadata"]["name"])
        for d in documents(f"{component}/rbac.yaml")
        if d["kind"] == "ServiceAccount"
    }
    assert (deployment["metadata"]["namespace"], spec["serviceAccountName"]) in accounts
    assert container(component)["image"] == f"ghcr.io/kube-tailor/kube-tailor:{PROJECT['version']}"
    [user] = [args for word, args in dockerfile() if word == "USER"]
    assert str(spec["securityContext"]["runAsUser"]) == user[0].split(":")[0]
    # one writer at a time: replicas of the recommender or updater elect a leader
    if component != "admission":
        assert deployment["spec"]["replicas"] > 1
        assert "--leader-elect" in command(component)


@pytest.mark.parametrize("component", ["recommender", "updater"])
def test_each_electing_service_may_take_its_own_lease_and_no_other(component: str) -> None:
    deployment = shipped(component)
    namespace = deployment["metadata"]["namespace"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    rbac = documents(f"{component}/rbac.yaml")
    [binding] = [
        d for d in rbac if d["kind"] == "RoleBinding" and d["roleRef"]["name"].endswith("-lease")
    ]
    assert binding["metadata"]["namespace"] == namespace
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account, "namespace": namespace}
    ]
    [role] = [
        d
        for d in rbac
        if d["kind"] == "Role"
        and d["metadata"] == {**d["metadata"], "name": binding["roleRef"]["name"]}
    ]
    assert role["metadata"]["namespace"] == namespace  # the pod's own: the default
    # even create by name: the Lease is created by a PUT to its name (tailor.lease)
    [rule] = role["rules"]
    assert rule["verbs"] == ["create", "get", "update"]
    assert rule["resourceNames"] == [f"tailor-{component}"]
    assert rule["resources"] == ["leases"]


def test_the_webhook_renews_the_status_lease_the_updater_reads_where_both_may() -> None:
    """Each in its pod's namespace (the default of `--status-lease` and
    `--admission-status-lease`), and only that one Lease by name."""
    expected = {"admission": [["create", "get", "update"]], "updater": [["get"]]}
    for component, verbs in expected.items():
        deployment = shipped(component)
        namespace = deployment["metadata"]["namespace"]
        account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        name = f"kube-tailor-{'admission' if component == 'admission' else 'updater-admission'}"
        rbac = documents(f"{component}/rbac.yaml")
        [role] = [
            d for d in rbac if d["kind"] == "Role" and d["metadata"]["name"] == f"{name}-status"
        ]
        [binding] = [
            d
            for d in rbac
            if d["kind"] == "RoleBinding" and d["roleRef"]["name"] == f"{name}-status"
        ]
        assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == namespace
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": namespace}
        ]
        assert [r["verbs"] for r in role["rules"]] == verbs
        assert all(r["resources"] == ["leases"] for r in role["rules"])
        assert [r["resourceNames"] for r in role["rules"]] == [[STATUS_LEASE]], component


def test_every_shipped_namespace_enforces_the_restricted_pod_security_standard() -> None:
    namespaces = [
        d for c in COMPONENTS for d in documents(f"{c}/rbac.yaml") if d["kind"] == "Namespace"
    ]
    assert len(namespaces) == len(COMPONENTS)
    for namespace in namespaces:
        labels = namespace["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_updater_reads_the_schedule_the_recommender_writes_where_both_may() -> None:
    written = option(command("recommender"), "--schedule-configmap")
    assert option(command("updater"), "--schedule-configmap") == written
    namespace, name = written.split("/")
    for component, role in (("recommender", "writer"), ("updater", "reader")):
        [found] = [
            d
            for d in documents(f"{component}/rbac.yaml")
            if d["kind"] == "Role" and d["metadata"]["name"] == f"kube-tailor-schedule-{role}"
        ]
        assert found["metadata"]["namespace"] == namespace
        assert all(rule["resources"] == ["configmaps"] for rule in found["rules"])
        # every verb, create too (a server-side apply to its name), is for that one ConfigMap
        for rule in found["rules"]:
            assert rule["resourceNames"] == [name], role


def test_the_registration_reaches_the_webhook_through_its_service_with_its_certificate() -> None:
    [registration] = documents("admission/webhook.yaml")[0]["webhooks"]
    target = registration["clientConfig"]["service"]
    service = shipped("admission", "Service")
    assert (target["namespace"], target["name"]) == (
        service["metadata"]["namespace"],
        service["metadata"]["name"],
    )
    [port] = service["spec"]["ports"]
    assert port["port"] == target["port"]
    assert service["spec"]["selector"] == shipped("admission")["spec"]["selector"]["matchLabels"]

    served = container("admission")
    [listening] = [p for p in served["ports"] if p["name"] == port["targetPort"]]
    args = command("admission")
    assert listening["containerPort"] == int(option(args, "--port"))
    assert served["readinessProbe"]["httpGet"]["port"] == port["targetPort"]

    [mount] = served["volumeMounts"]
    [volume] = shipped("admission")["spec"]["template"]["spec"]["volumes"]
    assert volume["name"] == mount["name"]
    assert volume["secret"]["secretName"] == "tailor-admission-tls"
    # a kubernetes.io/tls Secret (kubectl create secret tls, cert-manager) holds these keys
    for flag, key in (("--tls-cert", "tls.crt"), ("--tls-key", "tls.key")):
        assert Path(option(args, flag)) == Path(mount["mountPath"]) / key


def test_the_forecasters_kernels_cache_on_the_recommenders_writable_mount() -> None:
    """numba caches the compiled kernels in NUMBA_CACHE_DIR: under the read-only root it
    must be on a mounted emptyDir, or each process recompiles them."""
    env = dict(arg.split("=", 1) for word, args in dockerfile() if word == "ENV" for arg in args)
    cache = Path(env["NUMBA_CACHE_DIR"])
    served = container("recommender")
    assert served["securityContext"]["readOnlyRootFilesystem"] is True
    volumes = {v["name"]: v for v in shipped("recommender")["spec"]["template"]["spec"]["volumes"]}
    writable = [
        Path(mount["mountPath"])
        for mount in served["volumeMounts"]
        if "emptyDir" in volumes[mount["name"]] and not mount.get("readOnly", False)
    ]
    assert any(cache.is_relative_to(path) for path in writable), (cache, writable)


def test_the_dockerfile_copies_every_package_the_distribution_installs() -> None:
    copied = {args[0].rstrip("/") for word, args in dockerfile() if word == "COPY"}
    packages = {p.rstrip("*") for p in tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["packages"]["find"]["include"]}  # fmt: skip
    assert packages <= copied
    assert {"pyproject.toml", "README.md"} <= {
        name for word, args in dockerfile() if word == "COPY" for name in args[:-1]
    }
    [entrypoint] = [args for word, args in dockerfile() if word == "ENTRYPOINT"]
    assert entrypoint == ["[tailor]"]  # the exec form, shlex-split: the console script


@pytest.mark.slow
def test_what_the_dockerfile_copies_installs_a_working_tailor(tmp_path: Path) -> None:
    """Build the image's install step without a container runtime: only the COPYed files."""
    source = tmp_path / "src"
    source.mkdir()
    for word, args in dockerfile():
        if word == "COPY":
            *names, _ = args
            for name in names:
                origin = ROOT / name.rstrip("/")
                if origin.is_dir():
                    subprocess.run(["cp", "-r", str(origin), str(source)], check=True)
                else:
                    subprocess.run(["cp", str(origin), str(source)], check=True)
    site = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    install += ["--target", str(site), str(source)]
    subprocess.run(install, check=True, capture_output=True, cwd=tmp_path)
    script = (
        "import sys, tailor.cli.main as m, recommender, updater, admission;"
        "print(m.__file__);"
        "sys.argv = ['tailor', 'recommender', '--help']; m.app()"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(str(site))
    assert "--prometheus" in done.stdout
    assert (site / "bin" / "tailor").is_file()


@pytest.mark.parametrize("component", COMPONENTS)
def test_the_liveness_probe_and_scrape_annotations_reach_the_services_metrics_port(
    component: str,
) -> None:
    served = container(component)
    port = int(option(command(component), "--metrics-port"))
    assert port == DEFAULT_PORTS[component]  # upstream's port for the same component
    [named] = [p for p in served["ports"] if p["name"] == "metrics"]
    assert named["containerPort"] == port
    probe = served["livenessProbe"]["httpGet"]
    assert (probe["path"], probe["port"]) == ("/health-check", "metrics")
    annotations = shipped(component)["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(port)
    assert annotations["prometheus.io/path"] == "/metrics"


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_drain_takes_at_most_one_replica_of_each_service(component: str) -> None:
    deployment = shipped(component)
    budget = shipped(component, "PodDisruptionBudget")
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert budget["spec"]["selector"] == deployment["spec"]["selector"]
    assert budget["spec"]["maxUnavailable"] == 1  # never blocks a drain, even at one replica
    assert deployment["spec"]["replicas"] > 1  # so one keeps working through a drain


@pytest.mark.parametrize("component", ["recommender", "admission", "updater"])
def test_each_service_may_record_events_and_do_nothing_else_with_them(component: str) -> None:
    """Events on the VPAs and pods: create a new one, patch a repeat's count."""
    roles = [d for d in documents(f"{component}/rbac.yaml") if d["kind"] == "ClusterRole"]
    granted = [
        rule
        for role in roles
        for rule in role["rules"]
        if "events" in rule["resources"] or "events.k8s.io" in rule["apiGroups"]
    ]
    assert granted == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]
