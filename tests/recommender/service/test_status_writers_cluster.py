"""The recommender's status write keeps what other writers put in a VPA's status, on the
real API server: another controller adds 20 conditions while the recommender writes over a
stale read again and again; every one of the 20 survives, and so does ours (each write
that raced another is refused with 409 and made again over a fresh read)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from functools import partial

from recommender.service.status import merged_status
from tailor.kube import Cluster
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.rawapi import JSON_PATCH, RawApi
from tests.cluster.workloads import vpa, vpa_collection

OTHERS = 20


def ours(attempt: int) -> dict[str, object]:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {"type": "RecommendationProvided", "status": "True", "lastTransitionTime": stamp}
    return {"conditions": [{**condition, "message": f"write {attempt}"}], "recommendation": None}


def add_others(api: RawApi, path: str, done: threading.Event) -> None:
    """Another controller: each of its conditions appended by a JSON patch of its own."""
    for index in range(OTHERS):
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        condition = {"type": f"Other{index}", "status": "True", "lastTransitionTime": stamp}
        api.patch(
            f"{path}/status",
            [{"op": "add", "path": "/status/conditions/-", "value": condition}],
            JSON_PATCH,
        )
        time.sleep(0.05)  # a controller far busier than any on one VPA
    done.set()


def test_twenty_conditions_another_writer_sets_meanwhile_are_all_kept(
    kube_api: RawApi, kube_namespace: str, kube_cluster: ControlPlane
) -> None:
    install_crds(kube_api)
    path = f"{vpa_collection(kube_namespace)}/web"
    kube_api.create(vpa_collection(kube_namespace), vpa("web", "web"))
    seeded = {
        "conditions": [
            {"type": "Seed", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]
    }
    kube_api.patch(f"{path}/status", {"status": seeded}, "application/merge-patch+json")
    stale = kube_api.get(path)  # the pass's list: every write below starts from this read
    with kube_cluster.api_client() as client:
        cluster = Cluster(client)
        done = threading.Event()
        writer = threading.Thread(target=add_others, args=(kube_api, path, done))
        writer.start()
        writes = 0
        while not done.is_set() or writes < 5:
            answer = cluster.write_vpa_status(stale, partial(merged_status, ours=ours(writes)))
            assert answer.accepted, answer.message
            writes += 1
        writer.join()
    final = kube_api.get(path)["status"]["conditions"]
    types = [c["type"] for c in final]
    assert sorted(t for t in types if t.startswith("Other")) == sorted(
        f"Other{i}" for i in range(OTHERS)
    )
    assert "Seed" in types
    [mine] = [c for c in final if c["type"] == "RecommendationProvided"]
    assert mine["message"] == f"write {writes - 1}"
    assert len(types) == len(set(types))  # no condition twice
