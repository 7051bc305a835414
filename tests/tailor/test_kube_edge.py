"""tailor.kube's edge when the API server does not answer: a ClusterError, never urllib3's own."""

from __future__ import annotations

import kubernetes.client
import pytest

from tailor.kube import Cluster, ClusterError
from tests.cluster.processes import free_port


def test_an_api_server_that_does_not_answer_is_a_cluster_error() -> None:
    configuration = kubernetes.client.Configuration()
    configuration.host = f"https://127.0.0.1:{free_port()}"  # nothing listens there
    with kubernetes.client.ApiClient(configuration) as client:
        cluster = Cluster(client)
        with pytest.raises(ClusterError, match="cannot reach the API server to read limit ranges"):
            cluster.limit_ranges()
        with pytest.raises(ClusterError, match="cannot reach the API server"):
            cluster.vpas_if_installed()
        with pytest.raises(ClusterError, match="cannot reach the API server"):
            cluster.controller("Job", "default", "web-1")
