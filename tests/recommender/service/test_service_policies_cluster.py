"""A VPA's own settings through `tailor recommender`, for real.

Two Deployments with the same history, each OOM-killed at its 512 MiB limit three
hours before the end, backfilled into a real Prometheus.
- Upstream's AEP-8026: the VPA of `web` sets `oomBumpUpRatio: "3"` and `oomMinBumpUp:
  "0"` for every container, that of `api` nothing. The service must write, for both
  models, a memory recommendation that follows each VPA's own bump.
- Ours: the annotation `kube-tailor.io/vpa-set` (or `forecast-set`) tunes the model for
  one VPA: `web`'s numbers are the library's with those settings on its own history,
  `api`'s the library's with the flags'; an unreadable annotation keeps the last
  recommendation and says why in ConfigUnsupported.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.prometheus import PrometheusSettings, load_prometheus_history
from recommender.forecast.settings import ForecastSettings
from recommender.recommend import recommend_forecast_workloads, recommend_vpa
from recommender.service.policies import FORECAST_SET_ANNOTATION, VPA_SET_ANNOTATION
from recommender.vpa.settings import VpaSettings
from tailor.api.meta import ResourceList
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.cli.main import app
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.rawapi import MERGE_PATCH, Json, RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import create_deployment, daily_cycle, deployment, vpa, vpa_collection

pytestmark = pytest.mark.prometheus

MIB = 2**20
LIMIT = 512 * MIB
BUMP = {"containerName": "*", "oomBumpUpRatio": "3", "oomMinBumpUp": "0"}


def _history(namespace: str, end: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    # the cycle peaks an hour before the end whenever the test runs: the forecasts compared
    # below depend on the phase the history ends in (at one phase in 24 the two tie)
    peak_hour = float((end // 3600 - 1) % 24)
    web = daily_cycle(namespace, end, peak_hour=peak_hour).assign(memory_limit=float(LIMIT))
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
    return {name: target.memory_bytes() for name, target in _targets(api, namespace).items()}


def _serve_two(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory, policy: Json | None
) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """Deployments web and api, their VPAs (web's with `policy`) naming kube-tailor, their
    history in a real Prometheus; (url, usage, OOM kills) as the service reads them."""
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    history, events = _history(namespace, backfill_end())
    url = prometheus_server.start(usage_to_openmetrics(history, events)).url
    install_crds(api)
    node = f"oom-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    for name in ("web", "api"):
        create_deployment(api, namespace, deployment(name, node))
    vpas = vpa_collection(namespace)
    api.create(vpas, vpa("web", "web", recommender="kube-tailor", policy=policy))
    api.create(vpas, vpa("api", "api", recommender="kube-tailor"))
    wait_until(
        lambda: len(api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]) == 2,
        timeout=30,
        what="two pods",
    )
    seen = PrometheusSettings(
        url=url, history=timedelta(days=5), namespaces=(namespace,), retries=0
    )
    usage, kills = load_prometheus_history(seen)
    assert len(kills) == 2
    return url, usage, kills


def _pass(full_namespace: FullNamespace, url: str, *flags: str) -> str:
    base = ["recommender", "--once", "--prometheus", url, "--history", "5d",
            "--kubeconfig", str(full_namespace.cluster.kubeconfig)]  # fmt: skip
    result = CliRunner().invoke(app, [*base, *flags])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_each_vpas_oom_bump_sizes_its_memory_in_both_models(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    url, usage, kills = _serve_two(full_namespace, prometheus_server, BUMP)
    bumps = pd.DataFrame(
        [(namespace, "web", "app", 3.0, 0.0)],
        columns=["namespace", "workload", "container", "oom_bump_ratio", "oom_min_bump"],
    )
    _pass(full_namespace, url)
    expected = recommend_vpa(usage, kills, oom_bumps=bumps).set_index("workload")
    flags_only = recommend_vpa(usage, kills).set_index("workload")
    written = _memory_targets(api, namespace)
    assert written["web"] == _as_written(expected.at["web", "memory_target"])
    assert written["api"] == _as_written(flags_only.at["api", "memory_target"])
    assert (written["web"] or 0) > 2 * (
        written["api"] or np.inf
    )  # 3 x 512 MiB against max(1.2 x 512, 612) MiB

    _pass(full_namespace, url, "--strategy", "forecast")
    rows, _ = recommend_forecast_workloads(usage, kills, oom_bumps=bumps, step=300)
    planned = rows.set_index("workload")
    written = _memory_targets(api, namespace)
    for name in ("web", "api"):
        assert written[name] == _as_written(planned.at[name, "memory_target"]), name
    assert (written["web"] or 0) > 2 * (written["api"] or np.inf)


def _annotate(api: RawApi, namespace: str, name: str, annotation: str, text: str) -> None:
    patch = {"metadata": {"annotations": {annotation: text}}}
    api.patch(f"{vpa_collection(namespace)}/{name}", patch, MERGE_PATCH)


def test_a_vpas_own_settings_tune_the_model_for_it_alone(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory
) -> None:
    api, namespace = full_namespace.api, full_namespace.name
    url, usage, kills = _serve_two(full_namespace, prometheus_server, None)
    web, other = (usage[usage["workload"] == name] for name in ("web", "api"))

    tuned = "target_percentile=0.5; safety_margin=0"
    _annotate(api, namespace, "web", VPA_SET_ANNOTATION, tuned)
    out = _pass(full_namespace, url)
    assert f"recommended: {namespace}/web" in out and "unsupported" not in out
    settings = VpaSettings(target_percentile=0.5, safety_margin=0.0)
    [mine] = recommend_vpa(web, kills, settings).to_dict(orient="records")
    [theirs] = recommend_vpa(other, kills).to_dict(orient="records")
    written = _written_as(api, namespace, {"web": mine, "api": theirs})
    assert _condition(api, namespace, "web", "ConfigUnsupported")["status"] == "False"

    # a typo: the last recommendation stays, and the VPA says why
    _annotate(api, namespace, "web", VPA_SET_ANNOTATION, "target_percentil=0.5")
    out = _pass(full_namespace, url)
    assert (
        f"unsupported config (recommendation kept): {namespace}/web: "
        f"{VPA_SET_ANNOTATION}: unknown vpa setting 'target_percentil'"
    ) in out
    assert _targets(api, namespace)["web"] == written["web"]
    unsupported = _condition(api, namespace, "web", "ConfigUnsupported")
    assert unsupported["status"] == "True"
    assert "did you mean target_percentile" in unsupported["message"]

    # the forecaster's SLO knob: web may fall short in 5 % of its windows
    strict = "cpu_shortfall_mode=fixed; target_cpu_shortfall=0.05"
    _annotate(api, namespace, "web", FORECAST_SET_ANNOTATION, strict)
    _pass(full_namespace, url, "--strategy", "forecast")
    loose = ForecastSettings(cpu_shortfall_mode="fixed", target_cpu_shortfall=0.05)
    [mine] = recommend_forecast_workloads(web, kills, loose, step=300)[0].to_dict("records")
    [theirs] = recommend_forecast_workloads(other, kills, step=300)[0].to_dict("records")
    # the block in force is the reaction to usage over the request in force, knob or
    # not; the knob shows in the bounds of the schedule: web's are its own
    written = _written_as(api, namespace, {"web": mine, "api": theirs}, web_lower=False)
    lowers = _lower_bounds(api, namespace)
    assert mine["cpu_lower"] != theirs["cpu_lower"]
    for name, row in (("web", mine), ("api", theirs)):
        assert lowers[name].cpu_cores() == pytest.approx(row["cpu_lower"], abs=1e-3)
    # the vpa-set typo is not the forecaster's: nothing unsupported under --strategy forecast
    assert _condition(api, namespace, "web", "ConfigUnsupported")["status"] == "False"

    # valid alone, not on this history's 5-minute grid: web's alone is unsupported
    _annotate(api, namespace, "web", FORECAST_SET_ANNOTATION, "update_period_seconds=90")
    out = _pass(full_namespace, url, "--strategy", "forecast")
    assert f"recommended: {namespace}/api" in out
    assert f"unsupported config (recommendation kept): {namespace}/web" in out
    assert _targets(api, namespace) == written
    unsupported = _condition(api, namespace, "web", "ConfigUnsupported")
    assert "must be a whole number of the data's 300 s sample period" in unsupported["message"]
    # every VPA so: the pass still ends well, each one says why, nothing is lost
    _annotate(api, namespace, "api", FORECAST_SET_ANNOTATION, "update_period_seconds=90")
    out = _pass(full_namespace, url, "--strategy", "forecast")
    assert out.count("unsupported config (recommendation kept)") == 2, out
    assert _targets(api, namespace) == written


def _written_as(
    api: RawApi, namespace: str, rows: dict[str, Any], *, web_lower: bool = True
) -> dict[str, ResourceList]:
    """The uncapped targets written, each the library's row; web's CPU the lower."""
    written = _targets(api, namespace)
    for name, row in rows.items():
        assert written[name] == ResourceList.from_amounts(row["cpu_target"], row["memory_target"])
    if web_lower:
        assert (written["web"].cpu_cores() or 0) < (written["api"].cpu_cores() or 0)
    return written


def _targets(api: RawApi, namespace: str) -> dict[str, ResourceList]:
    return _written(api, namespace, "uncapped_target")


def _lower_bounds(api: RawApi, namespace: str) -> dict[str, ResourceList]:
    return _written(api, namespace, "lower_bound")


def _written(api: RawApi, namespace: str, field: str) -> dict[str, ResourceList]:
    """`field` of each VPA's one container recommendation in its status."""
    found = {}
    for name in ("web", "api"):
        document = VerticalPodAutoscaler.from_api(api.get(f"{vpa_collection(namespace)}/{name}"))
        assert document.status is not None and document.status.recommendation is not None
        [item] = document.status.recommendation.container_recommendations or []
        value = getattr(item, field)
        assert isinstance(value, ResourceList), (name, field, value)
        found[name] = value
    return found


def _condition(api: RawApi, namespace: str, name: str, kind: str) -> Json:
    conditions = api.get(f"{vpa_collection(namespace)}/{name}")["status"]["conditions"]
    [found] = [c for c in conditions if c["type"] == kind]
    return found
