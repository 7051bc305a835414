"""A VPA the recommender service serves, over a pod Prometheus has no history of."""

from __future__ import annotations

from tests.cluster.crds import install_crds
from tests.cluster.podtools import pod_manifest
from tests.cluster.rawapi import RawApi
from tests.cluster.workloads import vpa, vpa_collection


def serve_a_pod_without_history(api: RawApi, namespace: str) -> None:
    """Pod `rs-x` of ReplicaSet `rs`, and VPA `rs` naming kube-tailor for it: a pass of the
    service must then ask Prometheus about it."""
    install_crds(api)
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "0000-1"}
    pod = pod_manifest("rs-x")
    pod["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
    api.create(f"/api/v1/namespaces/{namespace}/pods", pod)
    served = vpa("rs", "rs", recommender="kube-tailor")
    served["spec"]["targetRef"] = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"}
    api.create(vpa_collection(namespace), served)
