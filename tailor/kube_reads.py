"""The reads and watches of the components' edge to the Kubernetes API (`tailor.kube`).

Apart from the writes because the two halves share nothing but the client and the JSON
decoding: every read answers the API's own JSON (dicts, `_preload_content=False`), a
missing object or kind is None where the caller can do without it, and any other refusal
or a connection that never answers is a ClusterError.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Generator, Mapping
from typing import Any

import kubernetes.client
import kubernetes.watch
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from tailor.api.crd import CHECKPOINT_PLURAL, GROUP, VERSION, VPA_PLURAL
from tailor.controller_kinds import CONTROLLER_KINDS
from tailor.kube_client import ClusterError, Listing, ResourceVersionGone, WatchEvent, api_message

Json = Mapping[str, Any]
# No answer at all: urllib3 raises MaxRetryError (refused, DNS, TLS), ProtocolError (a
# connection cut mid-answer) or ReadTimeoutError, none of them OSError.
UNREACHABLE = (OSError, urllib3.exceptions.HTTPError)


def _listing(listed: Json) -> Listing:
    metadata = listed.get("metadata") or {}
    return Listing(list(listed.get("items") or []), str(metadata.get("resourceVersion") or ""))


class ClusterReads:
    """The reads and watches of `tailor.kube.Cluster`, on one authenticated client."""

    def __init__(self, api_client: kubernetes.client.ApiClient) -> None:
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.apps = kubernetes.client.AppsV1Api(api_client)
        self.batch = kubernetes.client.BatchV1Api(api_client)
        self.custom = kubernetes.client.CustomObjectsApi(api_client)
        self.autoscaling = kubernetes.client.AutoscalingV2Api(api_client)

    @staticmethod
    def _json(response: Any) -> Json:
        return dict(json.loads(response.data or b"{}"))

    def _read(self, call: Any, what: str, **kwargs: Any) -> Json:
        found = self._read_if_served(call, what, **kwargs)
        if found is None:
            raise ClusterError(f"cannot read {what}: the API server does not serve it")
        return found

    def _read_if_served(self, call: Any, what: str, **kwargs: Any) -> Json | None:
        """The answer's JSON; None when the object or its kind does not exist (404)."""
        try:
            return self._json(call(_preload_content=False, **kwargs))
        except ApiException as error:
            if error.status == 404:
                return None
            raise ClusterError(f"cannot read {what}: {api_message(error)}") from None
        except UNREACHABLE as error:
            raise ClusterError(f"cannot reach the API server to read {what}: {error}") from None

    def _all_if_served(self, plural: str) -> Json | None:
        """One of our kinds listed in every namespace; None when its CRD is not installed."""
        call = self.custom.list_cluster_custom_object
        return self._read_if_served(call, plural, group=GROUP, version=VERSION, plural=plural)

    def pods(self) -> list[Json]:
        """Every pod of the cluster: node sums need the pods of all namespaces."""
        listed = self._read(self.core.list_pod_for_all_namespaces, "pods")
        return list(listed.get("items") or [])

    def nodes(self) -> dict[str, Json]:
        listed = self._read(self.core.list_node, "nodes")
        return {str(n["metadata"]["name"]): n for n in listed.get("items") or []}

    def limit_ranges(self) -> list[Json]:
        return self.limit_range_listing().items

    def limit_range_listing(self) -> Listing:
        """Every LimitRange of the cluster and the resourceVersion to watch them from."""
        return _listing(self._read(self.core.list_limit_range_for_all_namespaces, "limit ranges"))

    def controllers(self, kind: str) -> dict[tuple[str, str], Json]:
        """Every object of a controller kind (`CONTROLLER_KINDS`) by (namespace, name): the
        links from a pod to its Deployment or CronJob, and each group's configured size."""
        client, listing, _ = CONTROLLER_KINDS[kind]
        listed = self._read(getattr(getattr(self, client), listing), f"{kind} objects")
        return {
            (str(o["metadata"]["namespace"]), str(o["metadata"]["name"])): o
            for o in listed.get("items") or []
        }

    def controller(
        self, kind: str, namespace: str, name: str, timeout: float | None = None
    ) -> Json | None:
        """One controller by name (None when it is not there): a pod created a moment ago's
        ReplicaSet or Job, or a VPA's target; `timeout` bounds the whole request."""
        client, _, read = CONTROLLER_KINDS[kind]
        bounded = {} if timeout is None else {"_request_timeout": timeout}
        what = f"{kind} {namespace}/{name}"
        call = getattr(getattr(self, client), read)
        return self._read_if_served(call, what, name=name, namespace=namespace, **bounded)

    def listing_of(self, client: str, call: str, what: str) -> Listing:
        """A list-for-all-namespaces call (`client`'s `call`) with its resourceVersion."""
        return _listing(self._read(getattr(getattr(self, client), call), what))

    def watch_of(
        self,
        client: str,
        call: str,
        what: str,
        resource_version: str,
        seconds: int,
        watch: kubernetes.watch.Watch,
    ) -> Generator[WatchEvent, None, None]:
        """Changes seen by that list call after `resource_version` (see `_watch`)."""
        listed = getattr(getattr(self, client), call)
        return self._watch(watch, listed, what, resource_version, seconds)

    def hpas(self, namespace: str | None = None) -> list[Json]:
        """autoscaling/v2 HorizontalPodAutoscalers of one namespace (None: all), for conflicts."""
        what = "horizontalpodautoscalers"
        if namespace is None:
            listed = self._read(
                self.autoscaling.list_horizontal_pod_autoscaler_for_all_namespaces, what
            )
        else:
            call = self.autoscaling.list_namespaced_horizontal_pod_autoscaler
            listed = self._read(call, f"{what} in {namespace}", namespace=namespace)
        return list(listed.get("items") or [])

    def config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """A ConfigMap's data and binaryData (base64) in one map; None when there is none."""
        found = self._read_if_served(
            self.core.read_namespaced_config_map,
            f"ConfigMap {namespace}/{name}",
            name=name,
            namespace=namespace,
        )
        if found is None:
            return None
        return {**(found.get("binaryData") or {}), **(found.get("data") or {})}

    def vpas_if_installed(self) -> list[Json] | None:
        """Every VerticalPodAutoscaler of the cluster; None when the VPA CRD is not installed."""
        listing = self.vpa_listing()
        return None if listing is None else listing.items

    def vpa_listing(self) -> Listing | None:
        """`vpas_if_installed` with the resourceVersion to watch them from."""
        listed = self._all_if_served(VPA_PLURAL)
        return None if listed is None else _listing(listed)

    def watch_vpas(
        self, resource_version: str, seconds: int, watch: kubernetes.watch.Watch
    ) -> Generator[WatchEvent, None, None]:
        """VPA changes after `resource_version`, until the API server ends the call (`seconds`)."""
        return self._watch(
            watch,
            self.custom.list_cluster_custom_object,
            VPA_PLURAL,
            resource_version,
            seconds,
            group=GROUP,
            version=VERSION,
            plural=VPA_PLURAL,
        )

    def watch_limit_ranges(
        self, resource_version: str, seconds: int, watch: kubernetes.watch.Watch
    ) -> Generator[WatchEvent, None, None]:
        """LimitRange changes after `resource_version`, until the API server ends the call."""
        return self._watch(
            watch,
            self.core.list_limit_range_for_all_namespaces,
            "limit ranges",
            resource_version,
            seconds,
        )

    @staticmethod
    def _watch(
        watch: kubernetes.watch.Watch,
        call: Any,
        what: str,
        resource_version: str,
        seconds: int,
        **kwargs: Any,
    ) -> Generator[WatchEvent, None, None]:
        """Events of one watch call; bookmarks keep a quiet kind's resourceVersion fresh.

        The server ends the call after `seconds`; the read timeout (a little longer)
        catches a connection that went silent. 410 is ResourceVersionGone, any other
        refusal or a cut connection a ClusterError.
        """
        stream = watch.stream(
            call,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=seconds,
            _request_timeout=(10, seconds + 10),
            **kwargs,
        )
        try:
            with contextlib.closing(stream):  # an abandoned call closes its connection now
                for event in stream:
                    yield WatchEvent(str(event.get("type")), event.get("raw_object") or {})
        except ApiException as error:
            if error.status == 410:
                raise ResourceVersionGone(f"watch of {what}: {api_message(error)}") from None
            raise ClusterError(f"cannot watch {what}: {api_message(error)}") from None
        except UNREACHABLE as error:
            raise ClusterError(f"watch of {what} broken: {error}") from None

    def vpas(self) -> list[Json]:
        """Every VerticalPodAutoscaler (autoscaling.k8s.io/v1) of the cluster."""
        found = self.vpas_if_installed()
        if found is None:
            raise ClusterError("cannot list verticalpodautoscalers: is the VPA CRD installed?")
        return found

    def checkpoints(self) -> list[Json]:
        """Every VerticalPodAutoscalerCheckpoint of the cluster (none without the CRD)."""
        return list((self._all_if_served(CHECKPOINT_PLURAL) or {}).get("items") or [])
