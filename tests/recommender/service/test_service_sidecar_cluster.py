"""`tailor recommender` recommends for a native sidecar (an init container with
`restartPolicy: Always`) from its Prometheus history, on the real API server, and not
for a plain init container; upstream's recommender ignores both."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.recommend import recommend_vpa
from tailor.api.meta import ResourceList
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.cli.main import app
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import (
    create_deployment,
    daily_cycle,
    deployment,
    vpa,
    vpa_collection,
)

pytestmark = pytest.mark.prometheus


def test_a_native_sidecar_gets_its_own_recommendation_and_a_plain_init_container_none(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory, tmp_path: Path
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    app_history = daily_cycle(namespace, backfill_end(), days=2)
    proxy = app_history.assign(container="proxy", cpu=app_history["cpu"] / 10,
                               memory=app_history["memory"] / 4)  # fmt: skip
    setup = app_history.assign(container="setup", cpu=2.0, memory=2.0e9)  # a past run's
    history = pd.concat([app_history, proxy, setup], ignore_index=True)
    url = prometheus_server.start(usage_to_openmetrics(history)).url
    install_crds(api)
    node = f"side-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    web = deployment("web", node)
    small = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    pause = "registry.k8s.io/pause:3.10"
    web["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "setup", "image": pause, "resources": small},
        {"name": "proxy", "image": pause, "resources": small, "restartPolicy": "Always"},
    ]
    create_deployment(api, namespace, web)
    api.create(vpa_collection(namespace), vpa("web", "web", recommender="kube-tailor"))
    wait_until(
        lambda: len(api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]) == 1,
        timeout=30,
        what="the pod",
    )
    kubeconfig = str(full_namespace.cluster.kubeconfig)
    args = ["recommender", "--once", "--prometheus", url, "--history", "5d"]
    result = CliRunner().invoke(app, [*args, "--kubeconfig", kubeconfig])
    assert result.exit_code == 0, result.output
    found = VerticalPodAutoscaler.from_api(api.get(f"{vpa_collection(namespace)}/web"))
    assert found.status is not None and found.status.recommendation is not None
    written = {
        item.container_name: item.uncapped_target
        for item in found.status.recommendation.container_recommendations or []
    }
    expected = recommend_vpa(pd.concat([app_history, proxy], ignore_index=True))
    assert written == {
        row["container"]: ResourceList.from_amounts(row["cpu_target"], row["memory_target"])
        for row in expected.to_dict(orient="records")
    }
    assert set(written) == {"app", "proxy"}
