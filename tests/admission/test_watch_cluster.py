"""The webhook's cache follows the real API server through watches, not the re-list.

Every cache here re-lists only every 300 s, so whatever it sees within two seconds
came through a watch. A real 410 comes from watching VPAs from resourceVersion 1,
older than the CRD's watch cache; a real cut comes from a TCP proxy in between.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import kubernetes.client
import pytest

from admission.cluster_cache import ClusterCache
from admission.watch import Store, Watcher
from tailor.api.vpa import UpdateMode, VerticalPodAutoscaler
from tailor.kube import Cluster
from tests.admission.proxy import Proxy
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.rawapi import MERGE_PATCH, Json, RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import vpa_collection

RESYNC = 300.0
SEEN = 2.0  # seconds a change may take to reach the cache


def vpa_body(name: str, mode: str) -> Json:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "updatePolicy": {"updateMode": mode},
        },
    }


def modes(vpas: list[VerticalPodAutoscaler]) -> dict[str, UpdateMode | None]:
    return {
        v.name: v.spec.update_policy.update_mode if v.spec.update_policy else None for v in vpas
    }


@contextlib.contextmanager
def watching(client: kubernetes.client.ApiClient) -> Iterator[ClusterCache]:
    """A started cache (listed once, re-listing every 300 s); stop() must be prompt."""
    cache = ClusterCache(client, refresh_seconds=RESYNC)
    cache.refresh()
    cache.start()
    try:
        yield cache
    finally:
        begun = time.monotonic()
        cache.stop()
        assert time.monotonic() - begun < 3, "stop() waited for the watch calls to end"


@pytest.fixture
def cache(kube_cluster: ControlPlane, kube_api: RawApi) -> Iterator[ClusterCache]:
    install_crds(kube_api)
    with kube_cluster.api_client() as client, watching(client) as started:
        yield started


def test_a_vpa_created_modified_and_deleted_reaches_the_cache_within_two_seconds(
    cache: ClusterCache, kube_api: RawApi, kube_namespace: str
) -> None:
    vpas = vpa_collection(kube_namespace)
    kube_api.create(vpas, vpa_body("web", "Initial"))
    wait_until(
        lambda: modes(cache.vpas(kube_namespace)) == {"web": UpdateMode.INITIAL},
        timeout=SEEN,
        what="the new VPA in the cache",
    )
    kube_api.patch(f"{vpas}/web", {"spec": {"updatePolicy": {"updateMode": "Off"}}}, MERGE_PATCH)
    wait_until(
        lambda: modes(cache.vpas(kube_namespace)) == {"web": UpdateMode.OFF},
        timeout=SEEN,
        what="the new updateMode in the cache",
    )
    target = {"containerName": "app", "target": {"cpu": "250m"}}
    status = {"status": {"recommendation": {"containerRecommendations": [target]}}}
    kube_api.patch(f"{vpas}/web/status", status, MERGE_PATCH)  # what the recommender writes

    def recommended() -> bool:
        [vpa] = cache.vpas(kube_namespace)
        return vpa.status is not None and vpa.status.recommendation is not None

    wait_until(recommended, timeout=SEEN, what="the recommendation in the cache")
    kube_api.delete(f"{vpas}/web")
    wait_until(
        lambda: cache.vpas(kube_namespace) == [], timeout=SEEN, what="the VPA gone from the cache"
    )


def test_a_limit_range_created_modified_and_deleted_reaches_the_cache_within_two_seconds(
    cache: ClusterCache, kube_api: RawApi, kube_namespace: str
) -> None:
    ranges = f"/api/v1/namespaces/{kube_namespace}/limitranges"

    def ceilings() -> list[str]:
        return [
            str(item.max.memory)
            for limit_range in cache.limit_ranges(kube_namespace)
            for item in limit_range.spec.limits
            if item.max is not None and item.max.memory is not None
        ]

    ceiling = {"type": "Container", "max": {"memory": "300Mi"}}
    kube_api.create(ranges, {"metadata": {"name": "ceiling"}, "spec": {"limits": [ceiling]}})
    wait_until(lambda: ceilings() == ["300Mi"], timeout=SEEN, what="the new LimitRange")
    higher = {"spec": {"limits": [{"type": "Container", "max": {"memory": "1Gi"}}]}}
    kube_api.patch(f"{ranges}/ceiling", higher, MERGE_PATCH)
    wait_until(lambda: ceilings() == ["1Gi"], timeout=SEEN, what="the changed LimitRange")
    kube_api.delete(f"{ranges}/ceiling")
    wait_until(lambda: ceilings() == [], timeout=SEEN, what="the LimitRange gone")


def test_an_expired_resource_version_is_listed_again_and_the_watch_goes_on(
    kube_cluster: ControlPlane,
    kube_api: RawApi,
    kube_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="tailor.admission")
    install_crds(kube_api)
    vpas = vpa_collection(kube_namespace)
    kube_api.create(vpas, vpa_body("before", "Auto"))
    store = Store(VerticalPodAutoscaler, "VerticalPodAutoscalers")
    store.replace([], "1")  # a list from long ago: the API server no longer has its changes
    passes: list[bool] = []
    with kube_cluster.api_client() as client:
        cluster = Cluster(client)
        watcher = Watcher(
            store,
            cluster.vpa_listing,
            cluster.watch_vpas,
            record=lambda ok, _: passes.append(ok),
            watch_seconds=1,
        ).start()
        try:
            wait_until(
                lambda: "before" in modes(store.namespace(kube_namespace)),
                timeout=SEEN,
                what="the VPA listed again after 410",
            )
            kube_api.create(vpas, vpa_body("after", "Initial"))
            wait_until(
                lambda: "after" in modes(store.namespace(kube_namespace)),
                timeout=SEEN,
                what="a VPA through the new watch",
            )
            # the server ends each 1 s call; each one is a pass for the health check
            wait_until(lambda: len(passes) >= 3, timeout=5, what="watch calls ending")
        finally:
            watcher.stop()
    assert all(passes), passes
    gone = [r.getMessage() for r in caplog.records if "too old resource version" in r.getMessage()]
    assert len(gone) == 1
    assert gone[0].startswith("watch of verticalpodautoscalers: Expired: too old resource version")
    assert gone[0].endswith("; listing VerticalPodAutoscalers again")


def test_a_cut_watch_keeps_the_last_objects_and_the_cache_catches_up_when_it_is_back(
    kube_cluster: ControlPlane,
    kube_api: RawApi,
    kube_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="tailor.admission")
    install_crds(kube_api)
    vpas = vpa_collection(kube_namespace)
    kube_api.create(vpas, vpa_body("before", "Auto"))
    server = urlsplit(kube_cluster.server)
    proxy = Proxy((str(server.hostname), int(server.port or 443)))
    try:
        with kube_cluster.api_client() as client:
            client.configuration.host = f"https://127.0.0.1:{proxy.port}"
            with watching(client) as cache:
                assert modes(cache.vpas(kube_namespace)) == {"before": UpdateMode.AUTO}
                proxy.cut()
                kube_api.create(vpas, vpa_body("during", "Initial"))  # not through the proxy
                wait_until(
                    lambda: "keeping the last VerticalPodAutoscalers" in caplog.text,
                    timeout=5,
                    what="the cut noticed",
                )
                time.sleep(1.5)  # a list or two fail meanwhile
                assert modes(cache.vpas(kube_namespace)) == {"before": UpdateMode.AUTO}
                assert cache.loaded
                proxy.mend()
                wait_until(
                    lambda: "during" in modes(cache.vpas(kube_namespace)),
                    timeout=15,
                    what="the cache listing again once the API server is back",
                )
                kube_api.patch(
                    f"{vpas}/before", {"spec": {"updatePolicy": {"updateMode": "Off"}}}, MERGE_PATCH
                )
                wait_until(
                    lambda: modes(cache.vpas(kube_namespace)).get("before") == UpdateMode.OFF,
                    timeout=SEEN,
                    what="the watch running again",
                )
    finally:
        proxy.close()
    failures = [r.getMessage() for r in caplog.records]
    assert failures, "the cut was not logged"
    assert all("keeping the last" in message for message in failures), failures
    assert all("\n" not in message for message in failures)  # one line each, no trace
