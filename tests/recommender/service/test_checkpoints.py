"""Which checkpoints the service writes from the fitted model: pure, on a small history."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd

from recommender.recommend import fit_vpa_model
from recommender.service.checkpoints import checkpoint_objects, orphaned_checkpoints
from recommender.service.status import ServedVpa
from recommender.vpa.model import VpaModel
from tailor.api.checkpoint import VerticalPodAutoscalerCheckpoint
from tailor.api.vpa import VerticalPodAutoscaler

NOW = int(datetime(2026, 11, 23, tzinfo=UTC).timestamp())


def history(workloads: dict[str, int]) -> pd.DataFrame:
    """`count` 5-minute samples per workload (one container `app` each), ending at NOW."""
    frames = []
    for workload, count in workloads.items():
        times = pd.date_range(
            end=pd.Timestamp(NOW - 300, unit="s", tz="UTC"), periods=count, freq="5min"
        )
        frames.append(
            pd.DataFrame({"timestamp": times, "namespace": "shop", "workload": workload,
                          "pod": f"{workload}-0", "container": "app", "cpu": 0.5,
                          "memory": 2.0**28})
        )  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def served(name: str, workloads: set[str], containers: set[str]) -> ServedVpa:
    vpa = VerticalPodAutoscaler.from_api(
        {"metadata": {"name": name, "namespace": "shop"},
         "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}}}
    )  # fmt: skip
    return ServedVpa(vpa, workloads, containers)


def test_one_checkpoint_per_container_with_history_named_as_upstream_names_them() -> None:
    model, aggregates = fit_vpa_model(history({"web": 12, "api": 30}))
    entries = [served("web", {"web"}, {"app", "envoy"}), served("api", {"api"}, {"app"})]
    objects = checkpoint_objects(entries, model, aggregates, NOW)
    assert [(o["metadata"]["name"], o["spec"]["containerName"]) for o in objects] == [
        ("web-app", "app"),  # envoy has no history: no checkpoint
        ("api-app", "app"),
    ]
    statuses = [VerticalPodAutoscalerCheckpoint.from_api(o).status for o in objects]
    assert [s.total_samples_count if s else None for s in statuses] == [12, 30]
    assert objects[0]["metadata"]["namespace"] == "shop"
    assert objects[0]["spec"]["vpaObjectName"] == "web"
    assert objects[0]["status"]["version"] == "v3"


def test_a_saved_checkpoint_restores_the_models_recommendation() -> None:
    model, aggregates = fit_vpa_model(history({"web": 200}))
    [saved] = checkpoint_objects([served("web", {"web"}, {"app"})], model, aggregates, NOW)
    restored = VpaModel(np.array([0]))
    restored.load_checkpoint(0, saved["status"])
    assert restored.recommend().cpu_target[0] == model.recommend().cpu_target[0]


def test_vpas_spanning_several_workloads_or_without_pods_get_none() -> None:
    model, aggregates = fit_vpa_model(history({"web": 12, "api": 12}))
    assert (
        checkpoint_objects([served("mix", {"web", "api"}, {"app"})], model, aggregates, NOW) == []
    )
    assert checkpoint_objects([served("idle", set(), set())], model, aggregates, NOW) == []


def test_only_checkpoints_whose_vpa_is_gone_are_collected() -> None:
    def checkpoint(namespace: str, name: str, vpa: str) -> dict[str, object]:
        return {"metadata": {"namespace": namespace, "name": name}, "spec": {"vpaObjectName": vpa}}

    vpas: list[dict[str, object]] = [{"metadata": {"namespace": "shop", "name": "web"}},
            {"metadata": {"namespace": "ops", "name": "db"}, "spec": "unreadable"}]  # fmt: skip
    found = [
        checkpoint("shop", "web-app", "web"),
        checkpoint("shop", "old-app", "old"),  # its VPA was deleted
        checkpoint("ops", "db-main", "db"),  # a VPA we cannot read still counts
        checkpoint("other", "web-app", "web"),  # same name, another namespace: gone
    ]
    assert orphaned_checkpoints(found, vpas) == [("shop", "old-app"), ("other", "web-app")]
