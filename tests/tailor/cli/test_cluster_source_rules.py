"""Which Service is taken for Prometheus, and how pods' requests become the current ones."""

from __future__ import annotations

import pytest

from tailor.cli.cluster_source import current_from_pods, find_prometheus


def service(namespace: str, name: str, ports: list[dict], labels: dict | None = None) -> dict:
    metadata = {"namespace": namespace, "name": name, "labels": labels or {}}
    return {"metadata": metadata, "spec": {"ports": ports}}


@pytest.mark.parametrize(
    ("found", "product", "path"),
    [
        (service("mon", "prometheus-operated", [{"name": "web", "port": 9090}]), "operator", ""),
        (
            service("mon", "kps-kube-prometheus-prometheus", [{"name": "http-web", "port": 9090}]),
            "kube-prometheus-stack",
            "",
        ),
        (service("mon", "prom-prometheus-server", [{"name": "http", "port": 80}]), "chart", ""),
        (service("obs", "thanos-query", [{"name": "http", "port": 9090}]), "Thanos", ""),
        (
            service("vm", "vmselect-main", [{"name": "http", "port": 8481}]),
            "vmselect",
            "/select/0/prometheus",
        ),
        (service("vm", "vmsingle-main", [{"name": "http", "port": 8429}]), "vmsingle", ""),
    ],
)
def test_each_well_known_service_is_found_with_its_port_and_path(
    found: dict, product: str, path: str
) -> None:
    unrelated = service("default", "kubernetes", [{"name": "https", "port": 443}])
    grafana = service("mon", "grafana", [{"name": "http", "port": 80}])
    chosen = find_prometheus([unrelated, grafana, found])
    assert chosen is not None
    assert product in chosen.product
    assert chosen.path == path
    name = found["metadata"]["name"]
    port = found["spec"]["ports"][0]["name"]
    assert chosen.proxy_path().startswith(f"/api/v1/namespaces/{found['metadata']['namespace']}")
    assert f"/services/{name}:{port}/proxy{path}" in chosen.proxy_path()


def test_the_operator_service_wins_over_others_and_none_is_none() -> None:
    thanos = service("a", "thanos-query", [{"name": "http", "port": 9090}])
    operated = service("z", "prometheus-operated", [{"name": "web", "port": 9090}])
    assert find_prometheus([thanos, operated]).name == "prometheus-operated"  # type: ignore[union-attr]
    assert find_prometheus([service("d", "web", [{"name": "http", "port": 80}])]) is None


def pod(name: str, requests: dict, phase: str = "Running") -> dict:
    owner = {"kind": "ReplicaSet", "name": "web-7f9c5d", "controller": True}
    return {
        "metadata": {"namespace": "shop", "name": name, "ownerReferences": [owner]},
        "spec": {
            "containers": [{"name": "app", "resources": {"requests": requests}}],
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "resources": {}},
                {"name": "migrate", "resources": {"requests": {"cpu": "4"}}},
            ],
        },
        "status": {"phase": phase},
    }


def test_current_requests_of_a_deployments_pods() -> None:
    pods = [
        pod("web-7f9c5d-abcde", {"cpu": "250m", "memory": "256Mi"}),
        pod("web-7f9c5d-fghjk", {"cpu": "500m", "memory": "256Mi"}),
        pod("web-7f9c5d-done1", {"cpu": "8", "memory": "8Gi"}, phase="Succeeded"),
    ]
    current = current_from_pods(pods).set_index("container")
    assert list(current.index) == ["app", "proxy"]  # the native sidecar, not the init step
    assert current.loc["app", "workload"] == "web"
    assert current.loc["app", "cpu_current"] == 0.5  # the larger of the live pods'
    assert current.loc["app", "memory_current"] == 256 * 2**20
    assert current.loc["app", "pods"] == 2
    assert current["cpu_current"][current.index == "proxy"].isna().all()  # no request: unknown


def test_a_service_is_found_by_its_labels_under_any_name() -> None:
    labels = {"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/component": "server"}
    found = find_prometheus([service("m", "metrics", [{"name": "http", "port": 80}], labels)])
    assert found is not None and found.name == "metrics"
    other = {"app.kubernetes.io/component": "server"}  # a server, but not Prometheus
    assert find_prometheus([service("m", "api", [{"name": "http", "port": 80}], other)]) is None
