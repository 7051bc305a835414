"""deploy/helm/kube-tailor with the real helm: it lints, renders the plain manifests of
deploy/ (so the two cannot drift), follows its values, and refuses bad ones.

The chart on the real API server (install, pods running, uninstall) is in
test_helm_cluster.py.
"""

from __future__ import annotations

import base64
import copy
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.cluster.rawapi import Json
from tests.deploy.helm import CHART, NAMESPACE, Helm, command, find, values_file
from tests.deploy.manifests import COMPONENTS, DEPLOY, documents, option
from tests.deploy.test_manifests import PROJECT, parse

Key = tuple[str, str, str, str]
PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CA_BUNDLE = base64.b64encode(PEM).decode()
DEPLOYMENTS = {c: f"tailor-{c}" for c in COMPONENTS}


def key(document: Json) -> Key:
    meta = document["metadata"]
    return (document["apiVersion"], document["kind"], meta.get("namespace", ""), meta["name"])


def by_key(objects: list[Json]) -> dict[Key, Json]:
    """Objects by identity; one declared twice (the Namespace) must be the same each time."""
    found: dict[Key, Json] = {}
    for document in objects:
        assert found.setdefault(key(document), document) == document, key(document)
    return found


def plain_manifests(ca_bundle: str | None) -> dict[Key, Json]:
    """Every object deploy/ declares, the webhook's ${CA_BUNDLE} filled (or dropped: None)."""
    objects = [
        document
        for component in COMPONENTS
        for document in documents(f"{component}/rbac.yaml")
        + documents(f"{component}/deployment.yaml")
    ]
    [webhook] = copy.deepcopy(documents("admission/webhook.yaml"))
    for hook in webhook["webhooks"]:
        assert hook["clientConfig"].pop("caBundle") == "${CA_BUNDLE}"
        if ca_bundle is not None:
            hook["clientConfig"]["caBundle"] = ca_bundle
    crds = [yaml.safe_load(p.read_text()) for p in sorted((DEPLOY / "crds").glob("*.yaml"))]
    namespaced = [o for o in objects if o["kind"] != "Namespace"]  # the chart never creates it
    return by_key([*namespaced, webhook, *crds])


def test_the_chart_passes_helm_lint_strict(helm: Helm) -> None:
    done = helm.run("lint", "--strict", str(CHART), "--namespace", NAMESPACE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_helm_package_carries_the_crds_and_the_schema(helm: Helm, tmp_path: Path) -> None:
    done = helm.run("package", str(CHART), "--destination", str(tmp_path))
    assert done.returncode == 0, done.stderr
    with tarfile.open(tmp_path / "kube-tailor-0.1.0.tgz") as archive:
        names = set(archive.getnames())
    crds = {f"kube-tailor/crds/{p.name}" for p in (DEPLOY / "crds").glob("*.yaml")}
    assert crds | {"kube-tailor/values.schema.json", "kube-tailor/templates/NOTES.txt"} <= names


def test_the_chart_is_versioned_with_the_project_it_deploys() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["version"] == chart["appVersion"] == PROJECT["version"]


def test_the_charts_crds_are_deploy_crds_byte_for_byte() -> None:
    """deploy/crds/ is the source; the chart carries a copy (helm packages no symlinks)."""
    plain = {p.name: p.read_bytes() for p in (DEPLOY / "crds").glob("*.yaml")}
    charted = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*.yaml")}
    assert len(plain) == 2
    assert charted == plain, "copy deploy/crds/*.yaml into deploy/helm/kube-tailor/crds/"


@pytest.mark.parametrize("ca_bundle", [None, CA_BUNDLE], ids=["default", "ca-bundle"])
def test_the_default_render_is_the_plain_manifests(helm: Helm, ca_bundle: str | None) -> None:
    extra = [] if ca_bundle is None else ["--set", f"admission.caBundle={ca_bundle}"]
    rendered = by_key(helm.render("--include-crds", *extra))
    plain = plain_manifests(ca_bundle)
    assert sorted(rendered) == sorted(plain)
    for identity, document in plain.items():
        assert rendered[identity] == document, identity


def test_image_prometheus_strategy_default_and_extra_args_reach_the_commands(
    helm: Helm,
) -> None:
    objects = helm.render(
        *("--set", "image.repository=registry.example/tailor,image.tag=9.9.9"),
        *("--set", "image.pullPolicy=Always"),
        *("--set", "recommender.prometheus=http://thanos.monitoring:10902"),
        *("--set", "recommender.strategy=vpa,recommender.default=true"),
        *("--set", "recommender.recommenderName=tailor-b,recommender.interval=5m"),
        *("--set", "updater.evict=true,updater.metricsPort=9100,updater.memoryPressure=true"),
        *("--set-json", 'recommender.extraArgs=["--history=14d","--match=job=kubelet"]'),
        *("--set-json", 'admission.extraArgs=["--refresh=10m"]'),
    )
    for name in DEPLOYMENTS.values():
        [container] = find(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "registry.example/tailor:9.9.9"
        assert container["imagePullPolicy"] == "Always"

    recommender = command(objects, "tailor-recommender")
    assert option(recommender, "--prometheus") == "http://thanos.monitoring:10902"
    assert option(recommender, "--strategy") == "vpa"
    assert option(recommender, "--recommender-name") == "tailor-b"
    assert option(recommender, "--interval") == "5m"
    assert "--default" in recommender
    assert recommender[-2:] == ["--history=14d", "--match=job=kubelet"]
    # upstream's model writes no schedule, so neither the flag nor the writer Role
    assert not any(a.startswith("--schedule-configmap") for a in recommender)
    assert not [o for o in objects if o["metadata"]["name"] == "kube-tailor-schedule-writer"]

    updater = command(objects, "tailor-updater")
    assert "--evict" in updater
    assert option(updater, "--metrics-port") == "9100"
    # the pressure reaction reads the recommender's Prometheus
    assert option(updater, "--memory-pressure-prometheus") == "http://thanos.monitoring:10902"
    pod = find(objects, "Deployment", "tailor-updater")["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == "9100"
    assert pod["spec"]["containers"][0]["ports"] == [{"name": "metrics", "containerPort": 9100}]
    assert command(objects, "tailor-admission")[-1] == "--refresh=10m"

    for args in (recommender, updater, command(objects, "tailor-admission")):
        parse(args)  # the CLI accepts every rendered command


def test_the_schedule_configmap_is_one_value_for_both_services_and_their_roles(
    helm: Helm,
) -> None:
    objects = helm.render("--set", "scheduleConfigMap=plan-b")
    for deployment in ("tailor-recommender", "tailor-updater"):
        assert option(command(objects, deployment), "--schedule-configmap") == "kube-tailor/plan-b"
    for role in ("kube-tailor-schedule-writer", "kube-tailor-schedule-reader"):
        rules = find(objects, "Role", role)["rules"]
        named = [r["resourceNames"] for r in rules if r["verbs"] != ["create"]]
        assert named == [["plan-b"]], role


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_disabled_component_renders_none_of_its_objects(helm: Helm, component: str) -> None:
    objects = helm.render("--set", f"{component}.enabled=false")
    names = {o["metadata"]["name"] for o in objects}
    subjects = {
        s["name"] for o in objects if o["kind"].endswith("RoleBinding") for s in o["subjects"]
    }
    assert f"tailor-{component}" not in names | subjects
    assert f"kube-tailor-{component}" not in names
    for other in set(COMPONENTS) - {component}:
        assert {f"tailor-{other}", f"kube-tailor-{other}"} <= names
    assert ("kube-tailor-admission" in names) == (component != "admission")  # the webhook


def test_the_release_namespace_is_used_and_never_created(helm: Helm) -> None:
    done = helm.run("template", "tailor", str(CHART), "--namespace", "autoscaling")
    assert done.returncode == 0, done.stderr
    objects = [d for d in yaml.safe_load_all(done.stdout) if d]
    assert not [o for o in objects if o["kind"] == "Namespace"]  # never created nor adopted
    for document in objects:
        assert document["metadata"].get("namespace", "autoscaling") == "autoscaling"
        for subject in document.get("subjects", []):
            assert subject["namespace"] == "autoscaling"
    [hook] = find(objects, "MutatingWebhookConfiguration", "kube-tailor-admission")["webhooks"]
    assert hook["clientConfig"]["service"]["namespace"] == "autoscaling"
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"][0] == "autoscaling"
    assert option(command(objects, "tailor-updater"), "--schedule-configmap").startswith(
        "autoscaling/"
    )


@pytest.mark.parametrize("namespace", [None, "default", "kube-system"])
def test_a_system_release_namespace_is_refused_unless_asked(
    helm: Helm, namespace: str | None
) -> None:
    where = [] if namespace is None else ["--namespace", namespace]  # none: helm's default
    refused = helm.run("template", "tailor", str(CHART), *where)
    assert refused.returncode != 0
    assert "refusing to install kube-tailor into namespace" in refused.stderr
    assert f'"{namespace or "default"}"' in refused.stderr
    assert refused.stdout == ""

    allowed = helm.run(
        "template", "tailor", str(CHART), *where, "--set", "namespace.allowSystem=true"
    )
    assert allowed.returncode == 0, allowed.stderr
    objects = [d for d in yaml.safe_load_all(allowed.stdout) if d]
    assert not [o for o in objects if o["kind"] == "Namespace"]
    assert {o["metadata"].get("namespace", namespace or "default") for o in objects} == {
        namespace or "default"
    }


def test_placement_and_pod_annotations_reach_every_pod(helm: Helm, tmp_path: Path) -> None:
    placement: Json = {
        "nodeSelector": {"pool": "system"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["x"]}]}
                    ]
                }
            }
        },
        "podAnnotations": {"team": "platform"},
    }
    values = values_file(tmp_path, {c: placement for c in COMPONENTS})
    objects = helm.render("-f", str(values))
    for name in DEPLOYMENTS.values():
        pod = find(objects, "Deployment", name)["spec"]["template"]
        for field in ("nodeSelector", "tolerations", "affinity"):
            assert pod["spec"][field] == placement[field]
        annotations = pod["metadata"]["annotations"]
        assert annotations["team"] == "platform"
        assert annotations["prometheus.io/scrape"] == "true"


def test_cert_manager_issues_the_served_certificate_and_injects_its_ca(helm: Helm) -> None:
    objects = helm.render(
        "--set", "admission.certManager.enabled=true", "--set", f"admission.caBundle={CA_BUNDLE}"
    )
    webhook = find(objects, "MutatingWebhookConfiguration", "kube-tailor-admission")
    certificate = find(objects, "Certificate", "tailor-admission")
    assert webhook["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "kube-tailor/tailor-admission"
    }
    assert "caBundle" not in webhook["webhooks"][0]["clientConfig"]  # the injector's to fill
    [volume] = find(objects, "Deployment", "tailor-admission")["spec"]["template"]["spec"][
        "volumes"
    ]
    assert certificate["spec"]["secretName"] == volume["secret"]["secretName"]
    assert "tailor-admission.kube-tailor.svc" in certificate["spec"]["dnsNames"]
    issuer = find(objects, "Issuer", certificate["spec"]["issuerRef"]["name"])
    assert issuer["spec"] == {"selfSigned": {}}
    assert certificate["metadata"]["namespace"] == issuer["metadata"]["namespace"] == NAMESPACE
    plain = helm.render()
    assert not [o for o in plain if o["apiVersion"].startswith("cert-manager.io/")]


def test_the_namespace_scope_reaches_every_service_and_the_restriction_the_updater(
    helm: Helm,
) -> None:
    objects = helm.render(
        *("--set", "scope.vpaObjectNamespace=shop"),
        *("--set-json", 'scope.ignoredVpaObjectNamespaces=["ops","lab"]'),
        *("--set", "updater.minReplicas=3,updater.evictionTolerance=0.25"),
    )
    for name in DEPLOYMENTS.values():
        args = command(objects, name)
        assert option(args, "--vpa-object-namespace") == "shop"
        assert option(args, "--ignored-vpa-object-namespaces") == "ops,lab"
        parse(args)
    updater = command(objects, "tailor-updater")
    assert (option(updater, "--min-replicas"), option(updater, "--eviction-tolerance")) == (
        "3",
        "0.25",
    )
    zero = command(helm.render("--set", "updater.evictionTolerance=0"), "tailor-updater")
    assert option(zero, "--eviction-tolerance") == "0"  # 0 is a value, not "unset"
    plain = command(helm.render(), "tailor-updater")
    assert not any(a.startswith(("--min-replicas", "--vpa-object-namespace")) for a in plain)


@pytest.mark.parametrize("setting", ["recommender.strategy=vpa", "recommender.enabled=false"])
def test_without_a_schedule_the_updater_follows_each_vpas_recommendation(
    helm: Helm, setting: str
) -> None:
    objects = helm.render("--set", setting)
    args = command(objects, "tailor-updater")
    assert "--recommendations" in args
    assert not any(a.startswith("--schedule-configmap") for a in args)
    assert not [o for o in objects if o["metadata"]["name"] == "kube-tailor-schedule-reader"]
    parse(args)
    scheduled = command(helm.render(), "tailor-updater")
    assert "--recommendations" not in scheduled and "--vpa" in scheduled


def test_a_self_registering_webhook_gets_the_flags_and_rbac_to_update_its_registration(
    helm: Helm,
) -> None:
    objects = helm.render("--namespace", "ops", "--set", "admission.registerWebhook=true")
    # the chart creates the registration (the webhook may only update it) without a CA
    [created] = [o for o in objects if o["kind"] == "MutatingWebhookConfiguration"]
    assert created["metadata"]["name"] == "kube-tailor-admission"
    assert "caBundle" not in created["webhooks"][0]["clientConfig"]
    args = command(objects, "tailor-admission")
    assert "--register-webhook" in args
    assert option(args, "--webhook-service") == "ops/tailor-admission"
    [volume] = find(objects, "Deployment", "tailor-admission")["spec"]["template"]["spec"][
        "volumes"
    ]
    mount = "/etc/tailor-admission/"  # the Secret's keys: cert-manager's ca.crt among them
    assert option(args, "--ca-file") == mount + "ca.crt"
    assert volume["secret"]["secretName"] == "tailor-admission-tls"
    parse(args)
    shipped = {d["kind"]: d for d in documents("admission/registration-rbac.yaml")}
    role = find(objects, "ClusterRole", "kube-tailor-admission-registration")
    assert role["rules"] == shipped["ClusterRole"]["rules"]
    binding = find(objects, "ClusterRoleBinding", "kube-tailor-admission-registration")
    assert binding["subjects"][0]["namespace"] == "ops"
    assert not [o for o in helm.render() if o["metadata"]["name"].endswith("-registration")]

    both = helm.template(
        "--set", "admission.registerWebhook=true", "--set", f"admission.caBundle={CA_BUNDLE}"
    )
    assert both.returncode != 0
    assert "leave admission.caBundle empty" in both.stderr


def test_a_self_signed_webhook_needs_no_secret_and_may_only_update_its_registration(
    helm: Helm,
) -> None:
    objects = helm.render("--namespace", "ops", "--set", "admission.selfSignedCerts=true")
    args = command(objects, "tailor-admission")
    assert "--self-signed-certs" in args
    assert option(args, "--webhook-service") == "ops/tailor-admission"
    assert not [a for a in args if a.startswith(("--tls-", "--ca-file", "--register-webhook"))]
    parse(args)
    pod = find(objects, "Deployment", "tailor-admission")["spec"]["template"]["spec"]
    # the key is written to memory, where the read-only root filesystem allows: no Secret
    [volume] = pod["volumes"]
    assert volume["emptyDir"]["medium"] == "Memory"
    assert pod["containers"][0]["volumeMounts"] == [{"name": volume["name"], "mountPath": "/tmp"}]
    role = find(objects, "ClusterRole", "kube-tailor-admission-registration")
    shipped = {d["kind"]: d for d in documents("admission/registration-rbac.yaml")}
    assert role["rules"] == shipped["ClusterRole"]["rules"]  # get and patch, its own name
    [created] = [o for o in objects if o["kind"] == "MutatingWebhookConfiguration"]
    assert "caBundle" not in created["webhooks"][0]["clientConfig"]
    for other in ("admission.certManager.enabled=true", f"admission.caBundle={CA_BUNDLE}"):
        both = helm.template("--set", "admission.selfSignedCerts=true", "--set", other)
        assert both.returncode != 0
        assert "admission.selfSignedCerts makes its own CA" in both.stderr


@pytest.mark.parametrize("component", ["recommender", "updater"])
def test_one_replica_without_election_is_replaced_with_recreate_and_two_are_refused(
    helm: Helm, component: str
) -> None:
    alone = helm.render(
        "--set", f"{component}.leaderElect=false", "--set", f"{component}.replicas=1"
    )
    deployment = find(alone, "Deployment", f"tailor-{component}")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    [served] = deployment["spec"]["template"]["spec"]["containers"]
    assert "--leader-elect" not in served["command"]
    assert not [o for o in alone if o["metadata"]["name"] == f"kube-tailor-{component}-lease"]

    elected = find(helm.render(), "Deployment", f"tailor-{component}")
    assert "strategy" not in elected["spec"]  # rolling: the new pod stands by until handed over
    done = helm.template("--set", f"{component}.leaderElect=false")
    assert done.returncode != 0
    assert f"{component}.replicas > 1 needs {component}.leaderElect" in done.stderr


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("recommender.strategy=magic", "/recommender/strategy"),
        ("updater.metricsPort=70000", "/updater/metricsPort"),
        ("admission.port=0", "/admission/port"),
        ("recommender.default=maybe", "/recommender/default"),
        ("recommender.interval=soon", "/recommender/interval"),
        ("recommender.interval=500ms", "/recommender/interval"),  # the CLI wants >= 1s
        ("updater.interval=0s", "/updater/interval"),
        ("updater.interval=0.5s", "/updater/interval"),
        ("image.pullPolicy=Sometimes", "/image/pullPolicy"),
        ("replicaCount=2", "replicaCount"),
        ("updater.evictt=true", "evictt"),
        ("scheduleConfigMap=Plan_B", "/scheduleConfigMap"),
        ("updater.replicas=0", "/updater/replicas"),
        ("recommender.leaderElect=yes", "/recommender/leaderElect"),
        ("scope.vpaObjectNamespace=Shop_1", "/scope/vpaObjectNamespace"),
        ("updater.evictionTolerance=2", "/updater/evictionTolerance"),
    ],
)
def test_bad_values_are_refused_naming_the_value(helm: Helm, setting: str, named: str) -> None:
    done = helm.template("--set", setting)
    assert done.returncode != 0, done.stdout
    assert "values don't meet the specifications of the schema" in done.stderr
    assert named in done.stderr
    assert done.stdout == ""


def test_the_schema_forbids_every_top_level_key_values_yaml_does_not_have() -> None:
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(values)
