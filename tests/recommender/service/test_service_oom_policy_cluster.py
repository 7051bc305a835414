"""A VPA's own OOM bump (upstream's AEP-8026) through `tailor recommender`, for real.

Two Deployments with the same history, each OOM-killed at its 512 MiB limit three
hours before the end, backfilled into a real Prometheus; the VPA of `web` sets
`oomBumpUpRatio: "3"` and `oomMinBumpUp: "0"` for every container, that of `api`
nothing. The service must write, for both models, a memory recommendation that
follows each VPA's own bump: `web`'s the library's with that bump, `api`'s the
library's with the flags'.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.prometheus import PrometheusSettings, load_prometheus_history
from recommender.recommend import recommend_forecast_workloads, recommend_vpa
from tailor.api.meta import ResourceList
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.cli.main import app
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import create_deployment, daily_cycle, deployment, vpa, vpa_collection

pytestmark = pytest.mark.prometheus

MIB = 2**20
LIMIT = 512 * MIB
BUMP = {"containerName": "*", "oomBumpUpRatio": "3", "oomMinBumpUp": "0"}


def _history(namespace: str, end: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    web = daily_cycle(namespace, end).assign(memory_limit=float(LIMIT))
    api = web.assign(workload="api", pod="api-6d5f8c-fghij")
    kill = pd.Timestamp(end - 3 * 3600 - 7 * 60, unit="s", tz="UTC")
    events = pd.DataFrame(
        {
            "timestamp": [kill, kill],
            "namespace": [namespace, namespace],
            "pod": [web["pod"].iloc[0], api["pod"].iloc[0]],
            "container": ["app", "app"],
            "reason": ["OOMKilled", "OOMKilled"],
            "memory": [float(LIMIT), float(LIMIT)],
        }
    )
    return pd.concat([web, api], ignore_index=True), events


def _as_written(memory: object) -> float | None:
    """Bytes as the VPA status holds them (rounded up to a byte)."""
    return ResourceList.from_amounts(memory_bytes=float(str(memory))).memory_bytes()


def _memory_targets(api: RawApi, namespace: str) -> dict[str, float | None]:
    found = {}
    for name in ("web", "api"):
        document = VerticalPodAutoscaler.from_api(api.get(f"{vpa_collection(namespace)}/{name}"))
        assert document.status is not None and document.status.recommendation is not None
        [item] = document.status.recommendation.container_recommendations or []
        assert item.uncapped_target is not None
        found[name] = item.uncapped_target.memory_bytes()
    return found


def test_each_vpas_oom_bump_sizes_its_memory_in_both_models(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    history, events = _history(namespace, backfill_end())
    url = prometheus_server.start(usage_to_openmetrics(history, events)).url
    install_crds(api)
    node = f"oom-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    for name in ("web", "api"):
        create_deployment(api, namespace, deployment(name, node))
    vpas = vpa_collection(namespace)
    api.create(vpas, vpa("web", "web", recommender="kube-tailor", policy=BUMP))
    api.create(vpas, vpa("api", "api", recommender="kube-tailor"))
    wait_until(
        lambda: len(api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]) == 2,
        timeout=30,
        what="two pods",
    )
    # what the service reads: the same history, OOM kills and all, from Prometheus
    seen = PrometheusSettings(
        url=url, history=timedelta(days=5), namespaces=(namespace,), retries=0
    )
    usage, kills = load_prometheus_history(seen)
    assert len(kills) == 2
    bumps = pd.DataFrame(
        [(namespace, "web", "app", 3.0, 0.0)],
        columns=["namespace", "workload", "container", "oom_bump_ratio", "oom_min_bump"],
    )
    runner = CliRunner()
    base = ["recommender", "--once", "--prometheus", url, "--history", "5d",
            "--kubeconfig", str(full_namespace.cluster.kubeconfig)]  # fmt: skip

    result = runner.invoke(app, base)
    assert result.exit_code == 0, result.output
    expected = recommend_vpa(usage, kills, oom_bumps=bumps).set_index("workload")
    flags_only = recommend_vpa(usage, kills).set_index("workload")
    written = _memory_targets(api, namespace)
    assert written["web"] == _as_written(expected.at["web", "memory_target"])
    assert written["api"] == _as_written(flags_only.at["api", "memory_target"])
    assert (written["web"] or 0) > 2 * (
        written["api"] or np.inf
    )  # 3 x 512 MiB against max(1.2 x 512, 612) MiB

    result = runner.invoke(app, [*base, "--strategy", "forecast"])
    assert result.exit_code == 0, result.output
    rows, _ = recommend_forecast_workloads(usage, kills, oom_bumps=bumps, step=300)
    planned = rows.set_index("workload")
    written = _memory_targets(api, namespace)
    for name in ("web", "api"):
        assert written[name] == _as_written(planned.at[name, "memory_target"]), name
    assert (written["web"] or 0) > 2 * (written["api"] or np.inf)
