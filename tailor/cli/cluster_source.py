"""The current kube context as `tailor recommend`'s source: pods, their requests, Prometheus.

With no source flag, `tailor recommend` does what KRR does: it lists the pods of the
namespaces asked for (`-n`, `--all-namespaces`, the context's namespace otherwise; a
label selector), reads each container's requests (the *current* beside the
recommendation), and reads usage from Prometheus: `--prometheus URL`, else a
Prometheus found in the cluster (the well-known Services in `RULES`), reached
through the API server's service proxy with the kubeconfig's own credentials, so no
port-forward is needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tailor.pods import sized_containers
from tailor.quantity import QuantityError, cpu_cores, memory_bytes
from tailor.workloads import pod_workload

Json = Mapping[str, Any]
CURRENT_COLUMNS = ["namespace", "workload", "container", "cpu_current", "memory_current", "pods"]
FINISHED = ("Succeeded", "Failed")


class ClusterSourceError(RuntimeError):
    """No cluster to read, or one that refused what the command needs."""


@dataclass(frozen=True)
class PrometheusRule:
    """Services of one Prometheus-API server: by name or label, its port and path prefix."""

    product: str
    names: tuple[str, ...]  # a Service named so, `<release>-NAME` or `NAME-<name>`
    labels: tuple[Mapping[str, str], ...]  # or all the labels of one of these
    ports: tuple[str | int, ...]  # preferred port names or numbers, in order
    path: str = ""  # where the Prometheus HTTP API sits under the port


# The well-known Services, most specific first: the operator's governing Service, the
# kube-prometheus-stack's, the community chart's server, Thanos Query, VictoriaMetrics.
RULES = (
    PrometheusRule(
        "Prometheus (operator)",
        ("prometheus-operated",),
        ({"operated-prometheus": "true"},),
        ("web", "http-web", 9090),
    ),
    PrometheusRule(
        "Prometheus (kube-prometheus-stack)",
        ("kube-prometheus-prometheus", "prometheus-k8s"),
        ({"app": "kube-prometheus-stack-prometheus"}, {"app.kubernetes.io/name": "prometheus"}),
        ("http-web", "web", 9090),
    ),
    PrometheusRule(
        "Prometheus (community chart)",
        ("prometheus-server",),
        (
            {"app": "prometheus", "component": "server"},
            {"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/component": "server"},
        ),
        ("http", 80, 9090),
    ),
    PrometheusRule(
        "Thanos Query",
        ("thanos-query", "thanos-querier"),
        (
            {"app.kubernetes.io/name": "thanos-query"},
            {"app.kubernetes.io/name": "thanos", "app.kubernetes.io/component": "query"},
        ),
        ("http", 9090, 10902),
    ),
    PrometheusRule(
        "VictoriaMetrics vmselect",
        ("vmselect",),
        ({"app.kubernetes.io/name": "vmselect"},),
        ("http", 8481),
        "/select/0/prometheus",
    ),
    PrometheusRule(
        "VictoriaMetrics vmsingle",
        ("vmsingle", "victoria-metrics-single-server"),
        ({"app.kubernetes.io/name": "vmsingle"},),
        ("http", 8429),
    ),
)


@dataclass(frozen=True)
class FoundPrometheus:
    """A Service serving the Prometheus API, and how to reach it through the proxy."""

    product: str
    namespace: str
    name: str
    port: str  # the port's name, else its number, as the proxy path takes it
    scheme: str
    path: str

    def proxy_path(self) -> str:
        """The API server path that proxies to the Service (no port-forward needed)."""
        scheme = "https:" if self.scheme == "https" else ""
        return (
            f"/api/v1/namespaces/{self.namespace}/services/{scheme}{self.name}:{self.port}"
            f"/proxy{self.path}"
        )

    def describe(self) -> str:
        return f"{self.product}: Service {self.namespace}/{self.name} port {self.port}"


def _matches(rule: PrometheusRule, service: Json) -> bool:
    metadata = service.get("metadata") or {}
    name = str(metadata.get("name", ""))
    if any(_named_like(name, known) for known in rule.names):
        return True
    labels = metadata.get("labels") or {}
    return any(all(labels.get(k) == v for k, v in wanted.items()) for wanted in rule.labels)


def _named_like(name: str, known: str) -> bool:
    """A release's or operator's naming: `known` itself, `<release>-known`, `known-<name>`."""
    bare = known.lstrip("-")
    return name == bare or name.endswith(f"-{bare}") or name.startswith(f"{bare}-")


def _port(rule: PrometheusRule, service: Json) -> tuple[str, str] | None:
    """(port as the proxy names it, scheme) of the rule's preferred port on the Service."""
    ports = [p for p in (service.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
    for wanted in rule.ports:
        for port in ports:
            if wanted in (port.get("name"), port.get("port")):
                label = str(port.get("name") or port.get("port"))
                scheme = "https" if "https" in str(port.get("name", "")) else "http"
                return label, scheme
    return None


def find_prometheus(services: Iterable[Json]) -> FoundPrometheus | None:
    """The first Service (by rule, then namespace and name) that serves the Prometheus API."""
    ordered = sorted(
        services,
        key=lambda s: (s["metadata"].get("namespace", ""), s["metadata"].get("name", "")),
    )
    for rule in RULES:
        for service in ordered:
            if not _matches(rule, service):
                continue
            port = _port(rule, service)
            if port is None:
                continue
            metadata = service["metadata"]
            return FoundPrometheus(
                rule.product,
                str(metadata["namespace"]),
                str(metadata["name"]),
                port[0],
                port[1],
                rule.path,
            )
    return None


def current_from_pods(pods: Sequence[Json]) -> pd.DataFrame:
    """Per (namespace, workload, container): the largest request among its live pods
    (cores, bytes; NaN where none sets one) and how many pods run it."""
    rows = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        metadata = pod.get("metadata") or {}
        for container in sized_containers(pod):
            requests = (container.spec.get("resources") or {}).get("requests") or {}
            rows.append(
                (
                    str(metadata.get("namespace", "")),
                    pod_workload(pod),
                    container.name,
                    _amount(requests.get("cpu"), cpu_cores),
                    _amount(requests.get("memory"), memory_bytes),
                    str(metadata.get("name", "")),
                )
            )
    frame = pd.DataFrame(rows, columns=[*CURRENT_COLUMNS[:5], "pod"])
    grouped = frame.groupby(CURRENT_COLUMNS[:3], sort=True)
    current = grouped[["cpu_current", "memory_current"]].max()
    current["pods"] = grouped["pod"].nunique()
    return current.reset_index().loc[:, CURRENT_COLUMNS]


def _amount(text: Any, parse: Any) -> float:
    if text is None:
        return float("nan")
    try:
        return float(parse(text))
    except (QuantityError, ValueError):
        return float("nan")


@dataclass(frozen=True)
class KubeAccess:
    """What requests needs to call the API server as the kubeconfig's user."""

    host: str
    ca_file: Path | None
    verify: bool
    cert_file: Path | None
    key_file: Path | None
    token: str | None
    namespace: str  # the context's namespace, "default" when it names none


def kube_client(kubeconfig: Path | None, context: str | None) -> tuple[Any, KubeAccess]:
    """An API client of the kubeconfig's context (else in-cluster), and its access."""
    import kubernetes.client
    import kubernetes.config
    from kubernetes.config.config_exception import ConfigException

    namespace = "default"
    try:
        if kubeconfig is not None and not kubeconfig.is_file():
            raise ClusterSourceError(f"kubeconfig {kubeconfig} does not exist")
        configuration = kubernetes.client.Configuration()
        try:
            if kubeconfig is not None or context is not None:
                raise ConfigException("a kubeconfig was named")
            kubernetes.config.load_incluster_config(client_configuration=configuration)
            namespace = _in_cluster_namespace()
        except ConfigException:
            config_file = None if kubeconfig is None else str(kubeconfig)
            kubernetes.config.load_kube_config(
                config_file=config_file, context=context, client_configuration=configuration
            )
            _, active = kubernetes.config.list_kube_config_contexts(config_file=config_file)
            chosen = active if context is None else {"context": _named(config_file, context)}
            namespace = (chosen.get("context") or {}).get("namespace") or "default"
    except (ConfigException, OSError, ValueError) as error:
        raise ClusterSourceError(f"no cluster to read: {error}") from None
    token = (configuration.api_key or {}).get("authorization")
    access = KubeAccess(
        host=str(configuration.host).rstrip("/"),
        ca_file=Path(configuration.ssl_ca_cert) if configuration.ssl_ca_cert else None,
        verify=bool(configuration.verify_ssl),
        cert_file=Path(configuration.cert_file) if configuration.cert_file else None,
        key_file=Path(configuration.key_file) if configuration.key_file else None,
        token=str(token) if token else None,
        namespace=namespace,
    )
    return kubernetes.client.ApiClient(configuration), access


def _named(config_file: str | None, context: str) -> Json:
    import kubernetes.config

    contexts, _ = kubernetes.config.list_kube_config_contexts(config_file=config_file)
    return next((c["context"] for c in contexts if c.get("name") == context), {})


def _in_cluster_namespace() -> str:
    path = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
    return path.read_text().strip() if path.is_file() else "default"


def _listed(call: Any, what: str, **kwargs: Any) -> list[Json]:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        response = call(_preload_content=False, **kwargs)
        return list(json.loads(response.data).get("items") or [])
    except ApiException as error:
        raise ClusterSourceError(f"cannot list {what}: {error.reason} ({error.status})") from None
    except HTTPError as error:
        raise ClusterSourceError(f"cannot reach the API server to list {what}: {error}") from None


def list_pods(client: Any, namespaces: Sequence[str] | None, selector: str | None) -> list[Json]:
    """Pods of `namespaces` (None: every namespace) matching the label selector."""
    import kubernetes.client

    core = kubernetes.client.CoreV1Api(client)
    extra = {} if selector is None else {"label_selector": selector}
    if namespaces is None:
        return _listed(core.list_pod_for_all_namespaces, "pods", **extra)
    pods: list[Json] = []
    for namespace in namespaces:
        pods += _listed(
            core.list_namespaced_pod, f"pods in {namespace}", namespace=namespace, **extra
        )
    return pods


def list_services(client: Any) -> list[Json]:
    """Every Service of the cluster (where a Prometheus might be)."""
    import kubernetes.client

    core = kubernetes.client.CoreV1Api(client)
    return _listed(core.list_service_for_all_namespaces, "services")
