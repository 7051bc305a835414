"""How the components reach the API server, and what a failed or partial answer is.

Kept apart from `tailor.kube`'s calls so that the client set-up and the error types every
edge catches are small and read on their own; `tailor.kube` re-exports them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


# (connect, read) seconds of a call that sets no timeout of its own. The client's default is
# none at all: an API server that accepts connections but never answers (frozen, or a
# blackholed route) would hold a pass, and the service, forever. The read timeout bounds
# the wait between bytes, so a long list that keeps streaming is not cut.
DEFAULT_TIMEOUT = (5.0, 30.0)


class BoundedApiClient(kubernetes.client.ApiClient):
    """An ApiClient whose calls without `_request_timeout` get `timeout`."""

    def __init__(
        self,
        configuration: kubernetes.client.Configuration,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(configuration)
        self.timeout = timeout

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        # call_api(method, url, header_params, body, post_params, _request_timeout)
        if len(args) > 5:
            if args[5] is None:
                args = (*args[:5], self.timeout, *args[6:])
        elif kwargs.get("_request_timeout") is None:
            kwargs["_request_timeout"] = self.timeout
        return super().call_api(*args, **kwargs)


def api_client_from(
    kubeconfig: Path | None, timeout: tuple[float, float] = DEFAULT_TIMEOUT
) -> kubernetes.client.ApiClient:
    """A client from `kubeconfig`, else in-cluster, else the default kubeconfig; every call
    bounded by `timeout` (connect, read) unless it sets its own."""
    configuration = kubernetes.client.Configuration()
    try:
        if kubeconfig is not None:
            if not kubeconfig.is_file():
                raise ClusterError(f"kubeconfig {kubeconfig} does not exist")
            kubernetes.config.load_kube_config(
                config_file=str(kubeconfig), client_configuration=configuration
            )
            return BoundedApiClient(configuration, timeout)
        try:
            kubernetes.config.load_incluster_config(client_configuration=configuration)
        except ConfigException:
            kubernetes.config.load_kube_config(client_configuration=configuration)
        return BoundedApiClient(configuration, timeout)
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
