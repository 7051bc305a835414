"""How the components reach the API server, and what a failed or partial answer is.

Kept apart from `tailor.kube`'s calls so that the client set-up and the error types every
edge catches are small and read on their own; `tailor.kube` re-exports them.
"""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes.client
import kubernetes.config
import kubernetes.watch
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from tailor.cluster_port import ClusterError, Json, Listing, ResourceVersionGone, WatchEvent

__all__ = ["ClusterError", "Json", "Listing", "ResourceVersionGone", "WatchEvent"]


def new_watch() -> kubernetes.watch.Watch:
    """A Watch for `Cluster.watch_*`; its `stop()` ends a call under way from another thread.

    return_type "object" keeps every object as the API's JSON: the client's typed models
    would be built for nothing, and one that does not deserialize would end the watch.
    """
    return kubernetes.watch.Watch(return_type="object")


def api_client_from(kubeconfig: Path | None) -> kubernetes.client.ApiClient:
    """A client from `kubeconfig`, else in-cluster, else the default kubeconfig."""
    try:
        if kubeconfig is not None:
            if not kubeconfig.is_file():
                raise ClusterError(f"kubeconfig {kubeconfig} does not exist")
            return kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        try:
            configuration = kubernetes.client.Configuration()
            kubernetes.config.load_incluster_config(client_configuration=configuration)
            return kubernetes.client.ApiClient(configuration)
        except ConfigException:
            return kubernetes.config.new_client_from_config()
    except (ConfigException, OSError, ValueError) as error:
        raise ClusterError(f"cannot load a kubeconfig: {error}") from None


def api_message(error: ApiException) -> str:
    """The Status message of a refused call, else its reason."""
    try:
        body = json.loads(error.body or "{}")
    except ValueError:
        body = {}
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or error.reason or f"HTTP {error.status}")
