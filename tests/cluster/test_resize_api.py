"""What the real kube-apiserver 1.36 accepts and refuses around in-place resize."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.podtools import (
    applied_requests,
    container_status,
    create_pod,
    get_pod,
    pod_manifest,
    resize,
)
from tests.cluster.rawapi import RawApi, error_body, pod_path
from tests.cluster.waiting import wait_until

pytestmark = pytest.mark.cluster


@pytest.fixture
def api(kube_cluster: ControlPlane) -> Iterator[RawApi]:
    with kube_cluster.api_client() as client:
        yield RawApi(client)


@pytest.fixture
def running_pod(api: RawApi, kubelet_sim: KubeletSimulator, kube_namespace: str) -> str:
    """A Burstable pod Running on a 4-CPU simulated node."""
    node = f"api-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    manifest = pod_manifest(
        "web", node=node, requests={"cpu": "500m", "memory": "128Mi"}, limits={"memory": "256Mi"}
    )
    create_pod(api, kube_namespace, manifest)
    wait_until(
        lambda: get_pod(api, kube_namespace, "web")["status"].get("phase") == "Running",
        what="pod Running",
    )
    return "web"


def test_the_api_server_reports_its_real_version(api: RawApi) -> None:
    version = api.get("/version")
    assert version["gitVersion"] == "v1.36.3"
    assert (version["major"], version["minor"]) == ("1", "36")


def test_a_resize_through_the_resize_subresource_is_accepted(
    api: RawApi, running_pod: str, kube_namespace: str
) -> None:
    before = get_pod(api, kube_namespace, running_pod)
    answer = resize(api, kube_namespace, running_pod, requests={"cpu": "750m"})
    assert answer["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "750m"
    assert answer["metadata"]["generation"] == before["metadata"]["generation"] + 1
    actuated = wait_until(
        lambda: (
            applied_requests(get_pod(api, kube_namespace, running_pod))
            == {
                "cpu": "750m",
                "memory": "128Mi",
            }
        ),
        what="resize applied by the simulated kubelet",
    )
    assert actuated
    after = get_pod(api, kube_namespace, running_pod)
    assert container_status(after)["allocatedResources"]["cpu"] == "750m"
    assert after["status"]["observedGeneration"] == answer["metadata"]["generation"]


def test_a_plain_pod_update_may_not_change_resources(
    api: RawApi, running_pod: str, kube_namespace: str
) -> None:
    body = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]}}
    with pytest.raises(ApiException) as raised:
        api.patch(pod_path(kube_namespace, running_pod), body)
    assert raised.value.status == 422
    assert "pod updates may not change fields other than" in error_body(raised.value)["message"]


def test_a_resize_that_would_change_the_qos_class_is_rejected(
    api: RawApi, running_pod: str, kube_namespace: str
) -> None:
    # Burstable -> requests == limits for cpu and memory would make it Guaranteed.
    with pytest.raises(ApiException) as raised:
        resize(
            api,
            kube_namespace,
            running_pod,
            requests={"cpu": "500m", "memory": "256Mi"},
            limits={"cpu": "500m", "memory": "256Mi"},
        )
    assert raised.value.status == 422
    assert (
        "Pod QOS Class may not change as a result of resizing"
        in error_body(raised.value)["message"]
    )


def test_a_resize_may_not_touch_other_resources(
    api: RawApi, running_pod: str, kube_namespace: str
) -> None:
    with pytest.raises(ApiException) as raised:
        resize(api, kube_namespace, running_pod, requests={"ephemeral-storage": "1Gi"})
    assert raised.value.status == 422
    assert "only cpu and memory resources are mutable" in error_body(raised.value)["message"]


def test_1_36_refuses_a_resize_above_the_node_allocatable_with_node_capacity(
    api: RawApi, running_pod: str, kube_namespace: str
) -> None:
    with pytest.raises(ApiException) as raised:
        resize(api, kube_namespace, running_pod, requests={"cpu": "100"})
    status = error_body(raised.value)
    assert raised.value.status == 403
    # A StatusCause's type is serialised as "reason".
    assert {"reason": "NodeCapacity"} in status["details"]["causes"]
    assert "cpu, requested: 100000, allocatable: 4000" in status["message"]
    pod = get_pod(api, kube_namespace, running_pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m"
