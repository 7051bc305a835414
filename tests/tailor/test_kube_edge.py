"""tailor.kube's edge when the API server does not answer: a ClusterError, never urllib3's own."""

from __future__ import annotations

import socket
import time

import kubernetes.client
import pytest

from tailor.kube import Cluster, ClusterError
from tailor.leader import LeaseRecord
from tailor.lease import ApiLease
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


def test_a_lease_call_to_a_server_that_accepts_but_never_answers_gives_up() -> None:
    """A blackholed API server must not hold the elector's thread past its renew deadline."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections are accepted by the kernel, never answered
    configuration = kubernetes.client.Configuration()
    configuration.host = f"http://127.0.0.1:{silent.getsockname()[1]}"
    configuration.retries = False
    try:
        with kubernetes.client.ApiClient(configuration) as client:
            lease = ApiLease(client, "kube-tailor", "leader", timeout=0.5)
            started = time.monotonic()
            with pytest.raises(ClusterError, match="cannot read Lease kube-tailor/leader"):
                lease.read()
            assert time.monotonic() - started < 5  # without the timeout: forever
            with pytest.raises(ClusterError, match="cannot create Lease"):
                lease.create(LeaseRecord("me", 15, None, None))
    finally:
        silent.close()
