"""The recommender service's pass through the cluster port, on a cluster held in memory.

The same `recommend_once` the service runs against the real API server and Prometheus
(test_service_cluster.py and its neighbours), here with neither: the cluster is an
`InMemoryCluster` and the history comes through the service's own history cache with an
in-memory loader in place of Prometheus.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from recommender.data.columnar import shared_categories
from recommender.data.prometheus import PrometheusSettings
from recommender.data.prometheus_usage import with_spare_rows
from recommender.data.schema import KEY_LABELS, empty_events
from recommender.data.timestamps import TIMESTAMP_DTYPE
from recommender.service.history_cache import HistoryCache
from recommender.service.passes import Model, ServiceOptions, recommend_once
from tailor.quantity import cpu_cores, memory_bytes
from tailor.schedule_configmap import decode_schedule
from tests.in_memory_cluster import InMemoryCluster

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
Mi = 2**20
RS = "web-5d8f7c9b6d"
CREATED = "2026-01-01T00:00:00Z"


def _vpa(name: str, target: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": "shop", "creationTimestamp": CREATED},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "recommenders": [{"name": "kube-tailor"}],  # ours (ServiceOptions' default name)
        },
    }


def _cluster(*vpas: dict[str, Any]) -> InMemoryCluster:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": RS, "uid": "2"}
    pod = {
        "metadata": {
            "name": f"{RS}-abcde",
            "namespace": "shop",
            "ownerReferences": [{**owner, "controller": True}],
        },
        "spec": {"containers": [{"name": "app"}]},
        "status": {"phase": "Running"},
    }
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "1"}
    replica_set = {
        "metadata": {
            "name": RS,
            "namespace": "shop",
            "ownerReferences": [{**deployment, "controller": True}],
        }
    }
    return InMemoryCluster(
        pod_objects=[pod],
        vpa_objects=list(vpas),
        controller_objects={
            "ReplicaSet": {("shop", RS): replica_set},
            "Deployment": {("shop", "web"): {"metadata": {"name": "web", "namespace": "shop"}}},
        },
    )


class Loader:
    """Two days of a steady pod (a quarter core, 200 MiB), read as Prometheus would give them."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, ...]] = []

    def __call__(self, settings: PrometheusSettings, progress: Any, *, now: datetime) -> Any:
        self.reads.append(settings.namespaces)
        times = pd.date_range(now - timedelta(days=2), now, freq="5min", inclusive="left")
        rng = np.random.default_rng(0)
        usage = pd.DataFrame(
            {
                "timestamp": times,
                "namespace": "shop",
                "workload": "web",
                "pod": f"{RS}-abcde",
                "container": "app",
                "cpu": 0.25 + rng.uniform(-0.02, 0.02, len(times)),
                "memory": 200.0 * Mi,
            }
        )
        return usage, empty_events()


def _options(**changes: Any) -> ServiceOptions:
    return ServiceOptions(prometheus=PrometheusSettings(url="http://prometheus.invalid"), **changes)


def _target(cluster: InMemoryCluster, name: str) -> dict[str, str]:
    [found] = [v for v in cluster.vpa_objects if v["metadata"]["name"] == name]
    [item] = found["status"]["recommendation"]["containerRecommendations"]
    assert item["containerName"] == "app"
    return dict(item["target"])


def test_a_pass_writes_the_recommendation_and_the_checkpoint_through_the_port() -> None:
    cluster, loader = _cluster(_vpa("web", "web")), Loader()

    report = recommend_once(cluster, _options(), NOW, history=HistoryCache(loader=loader))
    assert report.recommended == ["shop/web"] and not report.refused
    assert loader.reads == [("shop",)]  # only the namespaces our VPAs' pods run in
    target = _target(cluster, "web")
    assert 0.25 <= cpu_cores(target["cpu"]) <= 0.4
    assert memory_bytes(target["memory"]) >= 200 * Mi
    assert report.checkpoints == 1
    [(key, checkpoint)] = cluster.checkpoint_objects.items()
    assert key == ("shop", "web-app")
    assert checkpoint["spec"] == {"vpaObjectName": "web", "containerName": "app"}


def test_a_vpa_whose_target_is_missing_is_told_so_and_a_refused_write_is_reported() -> None:
    cluster = _cluster(_vpa("web", "web"), _vpa("typo", "wbe"))
    cluster.refuse["vpa-status"] = (409, "the object has been modified")

    report = recommend_once(cluster, _options(), NOW, history=HistoryCache(loader=Loader()))
    assert sorted(report.refused) == [
        "shop/typo: the object has been modified",
        "shop/web: the object has been modified",
    ]
    assert all("status" not in v for v in cluster.vpa_objects)  # nothing written

    del cluster.refuse["vpa-status"]
    report = recommend_once(cluster, _options(), NOW, history=HistoryCache(loader=Loader()))
    assert report.recommended == ["shop/web"]
    assert len(report.misdirected) == 1 and report.misdirected[0].startswith("shop/typo: ")
    [typo] = [v for v in cluster.vpa_objects if v["metadata"]["name"] == "typo"]
    reasons = {c["type"]: c.get("reason") for c in typo["status"]["conditions"]}
    assert "ConfigUnsupported" in reasons


def test_the_forecasters_schedule_is_published_to_its_config_map() -> None:
    cluster = _cluster(_vpa("web", "web"))
    options = _options(model=Model.forecast, schedule_config_map=("kube-tailor", "schedule"))

    report = recommend_once(cluster, options, NOW, history=HistoryCache(loader=Loader()))
    assert report.recommended == ["shop/web"]
    assert report.schedule_rows is not None and report.schedule_rows > 0
    data = cluster.config_maps[("kube-tailor", "schedule")]
    rows = decode_schedule(data, "kube-tailor/schedule")
    assert len(rows) == report.schedule_rows
    assert {(r.namespace, r.workload, r.container) for r in rows} == {("shop", "web", "app")}
    assert all(r.cpu is not None and 0.2 < r.cpu < 0.5 for r in rows), json.dumps(data)[:200]


def test_checkpoints_of_deleted_vpas_are_collected_and_others_kept() -> None:
    cluster = _cluster(_vpa("web", "web"))
    stale = {
        "metadata": {"namespace": "shop", "name": "gone-app"},
        "spec": {"vpaObjectName": "gone"},
    }
    other = {
        "metadata": {"namespace": "shop", "name": "web-sidecar"},
        "spec": {"vpaObjectName": "web"},
    }
    cluster.checkpoint_objects.update({("shop", "gone-app"): stale, ("shop", "web-sidecar"): other})

    report = recommend_once(
        cluster, _options(), NOW, collect_checkpoints=True, history=HistoryCache(loader=Loader())
    )
    assert report.checkpoints_deleted == 1 and report.checkpoints == 1
    assert sorted(cluster.checkpoint_objects) == [("shop", "web-app"), ("shop", "web-sidecar")]


class ColumnarLoader(Loader):
    """The same history as the Prometheus source shapes it: keys categorical, the float
    columns one block with spare rows."""

    def __call__(self, settings: PrometheusSettings, progress: Any, *, now: datetime) -> Any:
        usage, events = super().__call__(settings, progress, now=now)
        names = shared_categories(usage[name] for name in KEY_LABELS)
        block = with_spare_rows(2, len(usage))
        block[:] = usage[["cpu", "memory"]].to_numpy().T
        columnar = pd.DataFrame(block.T, columns=["cpu", "memory"], copy=False)
        columnar.insert(0, "timestamp", usage["timestamp"].astype(TIMESTAMP_DTYPE))
        for at, name in enumerate(KEY_LABELS, start=1):
            columnar.insert(at, name, usage[name].astype(names))
        return columnar, events


def test_the_services_next_pass_folds_what_is_new_into_the_history_it_holds() -> None:
    cluster, cache = _cluster(_vpa("web", "web")), HistoryCache(loader=ColumnarLoader())
    later = NOW + timedelta(minutes=5)
    recommend_once(cluster, _options(), NOW, history=cache)
    report = recommend_once(cluster, _options(), later, history=cache)
    assert report.recommended == ["shop/web"]
    # the pass let go of the last frame: the new window went into the held block
    assert (cache.full_reads, cache.partial_reads, cache.in_place_folds) == (1, 1, 1)
    fresh = _cluster(_vpa("web", "web"))  # what a full read at the later time recommends
    recommend_once(fresh, _options(), later, history=HistoryCache(loader=ColumnarLoader()))
    assert _target(cluster, "web") == _target(fresh, "web")
