"""The in-place loop across an hour boundary: the period in force is followed at every minute.

The recommender service (forecast, schedule ConfigMap) and the updater run their passes
against the real API server, the kubelet simulator and a real Prometheus holding four
days of a Deployment's history, on a clock the test moves a minute at a time from 30
minutes before an hour boundary to 30 after (the history in Prometheus reaches past
it, so each pass sees the history up to its own "now", as in a live cluster). The
service re-plans every 10 minutes. Before the published schedule held the block in
force, a plan made at hh:30 started at the next hour: the follower found nothing to
apply for the 30 minutes before the boundary.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from recommender.data.openmetrics import usage_to_openmetrics
from recommender.data.prometheus import PrometheusSettings
from recommender.service.events import RecommenderEvents, recommender_events
from recommender.service.passes import Model, ServiceOptions, recommend_once
from tailor.kube import Cluster, api_client_from
from tailor.schedule_configmap import decode_schedule
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.prometheus import PrometheusFactory, backfill_end
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import (
    create_deployment,
    daily_cycle,
    deployment,
    running_pods,
    vpa,
    vpa_collection,
)
from updater.follow import PassOptions, follow_once
from updater.report import updater_events

pytestmark = pytest.mark.prometheus


def _millicores(cores: float) -> int:
    return max(1, math.ceil(cores * 1000 - 1e-9))


def _cpu_millicores(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def test_the_period_in_force_is_followed_at_every_minute_across_an_hour(
    full_namespace: FullNamespace, prometheus_server: PrometheusFactory
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    end = backfill_end()  # the history reaches an hour past the boundary crossed
    boundary = datetime.fromtimestamp(end - 3600, UTC)
    # the daily peak at the boundary: the plan moves there, so crossing it is a change
    peak = (boundary.hour + 1) % 24
    history = daily_cycle(namespace, end, peak_hour=peak)
    killed = pd.DataFrame(
        {
            "timestamp": [boundary - timedelta(hours=3)],
            "namespace": [namespace],
            "workload": ["web"],
            "pod": [str(history["pod"].iloc[0])],
            "container": ["app"],
            "reason": ["OOMKilled"],
            "memory": [512.0 * 2**20],
        }
    )
    url = prometheus_server.start(usage_to_openmetrics(history, killed)).url
    install_crds(api)
    plan = (namespace, "tailor-schedule")
    node = f"hour-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    create_deployment(api, namespace, deployment("web", node))
    api.create(
        vpa_collection(namespace),
        vpa("web", "web", mode="InPlaceOrRecreate", recommender="kube-tailor"),
    )
    wait_until(lambda: len(running_pods(api, namespace)) == 1, timeout=60, what="web running")
    cluster = Cluster(api_client_from(full_namespace.cluster.kubeconfig))
    service = ServiceOptions(
        PrometheusSettings(url=url, history=timedelta(days=5), namespaces=(namespace,)),
        model=Model.forecast,
        schedule_config_map=plan,
    )
    told = RecommenderEvents(recommender_events(cluster.core))
    follower = PassOptions(namespaces=frozenset({namespace}), events=updater_events(cluster.core))

    followed = []
    for minute in range(-30, 31):
        now = boundary + timedelta(minutes=minute)
        if minute % 10 == 0:  # the service's pass
            report = recommend_once(cluster, service, now=now, events=told)
            assert report.schedule_rows == 25, report
        data = cluster.config_map_data(*plan)
        assert data is not None
        rows = decode_schedule(data, "schedule")
        [due] = [r for r in rows if r.start <= now < r.end]  # the period in force is there
        [outcome] = follow_once(cluster, rows, now, follower)
        # resized, or at its size (waiting: the kubelet still applying the last resize)
        assert outcome.action.value in ("resize", "none", "wait") and outcome.applied, outcome
        assert outcome.detail, outcome  # every row says why
        [pod] = running_pods(api, namespace)
        requests = pod["spec"]["containers"][0]["resources"]["requests"]
        assert due.cpu is not None and due.memory is not None
        assert _cpu_millicores(requests["cpu"]) == _millicores(due.cpu), (minute, due)
        assert int(requests["memory"]) == math.ceil(due.memory), (minute, due)
        followed.append((minute, due.start))
    # the boundary was crossed with the services running: both hours were followed
    hours = {start for _, start in followed}
    assert hours == {boundary - timedelta(hours=1), boundary}
    reasons = {
        e["reason"]
        for e in api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        if e.get("source", {}).get("component", "").startswith("kube-tailor")
    }
    assert {"InPlaceResizedByVPA", "RecommendationChanged", "OOMKillTakenIntoAccount"} <= reasons
    kills = [
        e
        for e in api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        if e["reason"] == "OOMKillTakenIntoAccount"
    ]
    # told once, on the VPA and on the killed pod, though every pass read the kill again
    assert sorted(e["involvedObject"]["kind"] for e in kills) == ["Pod", "VerticalPodAutoscaler"]
    assert all(e["count"] == 1 for e in kills)
