"""The one rule that names a pod's workload, for history readers and the updater alike."""

from __future__ import annotations

from typing import Any

import pytest

from recommender.data.openmetrics import replicaset_name
from tailor.workloads import pod_workload, workload_from_owner


@pytest.mark.parametrize(
    ("kind", "name", "workload"),
    [
        ("ReplicaSet", "web-5d8f7c9b6d", "web"),
        ("ReplicaSet", "api-gateway-7b9c6d5f4", "api-gateway"),
        ("ReplicaSet", "frontend", "frontend"),
        ("ReplicaSet", "my-db", "my-db"),  # suffix too short to be a template hash
        ("ReplicaSet", "cache-aaaaaaaa", "cache-aaaaaaaa"),  # vowels are not in the alphabet
        ("StatefulSet", "db-5d8f7c9b6d", "db-5d8f7c9b6d"),
        ("Job", "nightly", "nightly"),
        ("Job", "backup-29412345", "backup"),  # a CronJob's run: minutes since the epoch
        ("Job", "db-migrate-2", "db-migrate-2"),  # too short to be a scheduled time
        ("StatefulSet", "backup-29412345", "backup-29412345"),
    ],
)
def test_workload_from_owner(kind: str, name: str, workload: str) -> None:
    assert workload_from_owner(kind, name) == workload


@pytest.mark.parametrize("workload", ["web", "a-b-c", 'we"ird\\name'])
def test_writer_replicaset_names_map_back_to_the_workload(workload: str) -> None:
    assert workload_from_owner("ReplicaSet", replicaset_name(workload)) == workload


def pod(name: str, *owners: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "ownerReferences": list(owners)}}


def test_a_pod_of_a_deployment_belongs_to_the_deployment() -> None:
    owner = {"kind": "ReplicaSet", "name": "web-5d8f7c9b6d", "controller": True}
    assert pod_workload(pod("web-5d8f7c9b6d-x2x4z", owner)) == "web"


def test_the_controller_wins_over_an_earlier_plain_owner() -> None:
    plain = {"kind": "ConfigMap", "name": "settings"}
    controller = {"kind": "StatefulSet", "name": "db", "controller": True}
    assert pod_workload(pod("db-0", plain, controller)) == "db"


def test_a_pod_without_owner_is_its_own_workload() -> None:
    assert pod_workload(pod("debug")) == "debug"
    assert pod_workload({"metadata": {"name": "bare"}}) == "bare"
