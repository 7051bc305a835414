"""A verdict reused for identical pods only while the cluster view's revision holds (pure).

The view is made of the webhook's own stores (`admission.watch.Store`, `admission.owners
.Index`), changed by watch events as the API server would send them; the real watches are
in test_verdicts_cluster.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Hashable
from typing import Any

from admission.admit import admit
from admission.owners import Index
from admission.review import AdmissionRequest, Verdict, parse_review, review_response
from admission.verdicts import VerdictCache
from admission.watch import Store
from tailor.api import LimitRange, VerticalPodAutoscaler
from tailor.kube import ClusterError, WatchEvent
from tests.admission.objects import container, pod
from tests.admission.test_admit import REPLICA_SET, creating, review

Json = dict[str, Any]


def vpa_json(cpu: str, version: str, mode: str = "Auto") -> Json:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    recommendation = {"containerName": "app", "target": {"cpu": cpu, "memory": "300Mi"}}
    return {
        "metadata": {"name": "web", "namespace": "shop", "resourceVersion": version},
        "spec": {"targetRef": target, "updatePolicy": {"updateMode": mode}},
        "status": {"recommendation": {"containerRecommendations": [recommendation]}},
    }


def range_json(min_cpu: str, version: str) -> Json:
    limits = [{"type": "Container", "min": {"cpu": min_cpu}}]
    metadata = {"name": "limits", "namespace": "shop", "resourceVersion": version}
    return {"metadata": metadata, "spec": {"limits": limits}}


class Watched:
    """The webhook's stores, fed by hand; counts the decisions made through it."""

    def __init__(self) -> None:
        self.vpa_store = Store(VerticalPodAutoscaler, "VerticalPodAutoscalers")
        self.vpa_store.replace([vpa_json("300m", "1")], "1")
        self.range_store = Store(LimitRange, "LimitRanges")
        self.range_store.replace([], "1")
        self.replica_sets = Index("ReplicaSet")
        self.replica_sets.replace([REPLICA_SET], "1")
        self.broken = False
        self.decisions = 0

    def vpas(self, namespace: str) -> list[VerticalPodAutoscaler]:
        return self.vpa_store.namespace(namespace)

    def limit_ranges(self, namespace: str) -> list[LimitRange]:
        return self.range_store.namespace(namespace)

    def controller(self, kind: str, namespace: str, name: str) -> Json | None:
        if self.broken:
            raise ClusterError("the API server is away")
        found = self.replica_sets.get(namespace, name)
        return dict(found) if found is not None else None

    def has_controller(self, kind: str, namespace: str, name: str) -> bool:
        return True

    def hpas(self, namespace: str) -> list[Json]:
        return []

    def node(self, name: str) -> Json | None:
        return None

    def revision(self, namespace: str) -> Hashable:
        return tuple(
            store.revision(namespace)
            for store in (self.vpa_store, self.range_store, self.replica_sets)
        )

    def decide(self, request: AdmissionRequest) -> Verdict:
        self.decisions += 1
        return admit(request, self)


def web_pod(cpu: str = "100m") -> Json:
    return pod(container("app", {"cpu": cpu, "memory": "100Mi"}))


def patched_cpu(verdict: Verdict) -> str:
    """The cpu request the verdict's patch writes."""
    body = json.dumps(list(verdict.operations))
    [written] = [op["value"] for op in json.loads(body) if op["path"].endswith("requests/cpu")]
    return str(written)


def verdict(cache: VerdictCache, view: Watched, pod: Json | AdmissionRequest) -> Verdict:
    """The cache's verdict on creating `pod` (a pod's JSON, or its whole request)."""
    request = pod if isinstance(pod, AdmissionRequest) else creating(pod)
    return cache.verdict(request, lambda: view.decide(request))


def test_identical_pods_share_one_decision_until_their_vpa_changes() -> None:
    view = Watched()
    cache = VerdictCache(view)
    first = [verdict(cache, view, web_pod()) for _ in range(3)]
    assert view.decisions == 1 and cache.reused == 2
    assert all(v is first[0] for v in first) and patched_cpu(first[0]) == "300m"
    epoch = view.vpa_store.epoch
    assert view.vpa_store.apply(WatchEvent("MODIFIED", vpa_json("500m", "2")), epoch)
    assert patched_cpu(verdict(cache, view, web_pod())) == "500m"
    assert view.decisions == 2
    off = vpa_json("500m", "3", mode="Off")
    assert view.vpa_store.apply(WatchEvent("MODIFIED", off), epoch)
    assert verdict(cache, view, web_pod()).operations == ()
    assert view.decisions == 3


def test_a_new_or_changed_limit_range_gives_a_new_verdict() -> None:
    view = Watched()
    cache = VerdictCache(view)
    assert patched_cpu(verdict(cache, view, web_pod())) == "300m"
    epoch = view.range_store.epoch
    assert view.range_store.apply(WatchEvent("ADDED", range_json("400m", "2")), epoch)
    assert patched_cpu(verdict(cache, view, web_pod())) == "400m"
    assert view.range_store.apply(WatchEvent("MODIFIED", range_json("450m", "3")), epoch)
    assert patched_cpu(verdict(cache, view, web_pod())) == "450m"
    assert view.range_store.apply(WatchEvent("DELETED", range_json("450m", "4")), epoch)
    assert patched_cpu(verdict(cache, view, web_pod())) == "300m"
    view.range_store.replace([range_json("350m", "5")], "5")  # a new list
    assert patched_cpu(verdict(cache, view, web_pod())) == "350m"
    assert view.decisions == 5 and cache.reused == 0


def test_a_different_pod_is_decided_on_its_own_and_the_oldest_makes_room() -> None:
    view = Watched()
    cache = VerdictCache(view, size=2)
    verdict(cache, view, web_pod("100m"))
    verdict(cache, view, web_pod("120m"))
    assert view.decisions == 2
    verdict(cache, view, web_pod("140m"))  # the 100m pod's verdict is dropped
    verdict(cache, view, web_pod("120m"))
    assert view.decisions == 3
    verdict(cache, view, web_pod("100m"))
    assert view.decisions == 4


def test_a_change_in_another_namespace_or_to_a_replica_sets_status_reuses_the_verdict() -> None:
    view = Watched()
    cache = VerdictCache(view)
    verdict(cache, view, web_pod())
    other = {**vpa_json("1", "2"), "metadata": {"name": "web", "namespace": "other"}}
    assert view.vpa_store.apply(WatchEvent("ADDED", other), view.vpa_store.epoch)
    scaled = {**REPLICA_SET, "status": {"replicas": 5}}  # owner links as they were
    assert view.replica_sets.apply(WatchEvent("MODIFIED", scaled), view.replica_sets.epoch)
    verdict(cache, view, web_pod())
    assert view.decisions == 1 and cache.reused == 1


def test_a_verdict_given_for_a_failure_is_never_reused() -> None:
    view = Watched()
    view.broken = True
    cache = VerdictCache(view)
    answers = [verdict(cache, view, web_pod()) for _ in range(2)]
    assert view.decisions == 2
    assert all(not v.lasting and "cluster unreadable" in v.reason for v in answers)
    view.broken = False
    assert patched_cpu(verdict(cache, view, web_pod())) == "300m"


def test_the_answer_of_a_reused_verdict_carries_each_requests_own_uid() -> None:
    view = Watched()
    cache = VerdictCache(view)
    requests = [parse_review(review(web_pod(), uid=uid)) for uid in ("a1", "b2")]
    answers = [review_response(r, verdict(cache, view, r)) for r in requests]
    assert [a["response"]["uid"] for a in answers] == ["a1", "b2"]
    patches = [base64.b64decode(a["response"]["patch"]) for a in answers]
    assert patches[0] == patches[1] and cache.reused == 1 and view.decisions == 1
