"""An API server that accepts connections but never answers costs one call's read timeout,
not the service: every call the components make without a bound of its own gets one."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
import yaml

from tailor.kube import Cluster, ClusterError, api_client_from


def test_a_silent_api_server_is_given_up_after_the_read_timeout(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel accepts; nobody answers
        port = silent.getsockname()[1]
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        cluster = Cluster(api_client_from(kubeconfig, (1.0, 1.5)))
        begun = time.monotonic()
        with pytest.raises(ClusterError, match="cannot reach the API server to read pods"):
            cluster.pods()
        waited = time.monotonic() - begun
        with pytest.raises(ClusterError, match="cannot reach the API server to write"):
            cluster.evict({"metadata": {"name": "p", "namespace": "n"}})
    assert 1.5 <= waited < 10  # one read timeout (urllib3 retries none of a read)
