"""The components' edge to the Kubernetes API: the reads and writes they make, in one place.

The recommender service, the updater and the admission webhook read the same
objects (pods, VPAs, ReplicaSets, LimitRanges); they are handled as the API's own
JSON (dicts), which the pure modules read, so the official client's typed models
are bypassed with `_preload_content=False`.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Generator, Mapping
from functools import partial
from typing import Any, cast

import kubernetes.client
import kubernetes.config
import kubernetes.watch
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from tailor.api.crd import CHECKPOINT_PLURAL, GROUP, VERSION, VPA_PLURAL
from tailor.cluster_port import FIELD_MANAGER, Answer
from tailor.controller_kinds import CONTROLLER_KINDS
from tailor.kube_client import (
    ClusterError,
    Listing,
    ResourceVersionGone,
    WatchEvent,
    api_client_from,
    api_message,
    new_watch,
)

__all__ = [
    "UNREACHABLE",
    "Answer",
    "Cluster",
    "ClusterError",
    "Json",
    "Listing",
    "ResourceVersionGone",
    "WatchEvent",
    "api_client_from",
    "api_message",
    "new_watch",
]

Json = Mapping[str, Any]
# No answer at all: urllib3 raises MaxRetryError (refused, DNS, TLS), ProtocolError (a
# connection cut mid-answer) or ReadTimeoutError, none of them OSError.
UNREACHABLE = (OSError, urllib3.exceptions.HTTPError)


def _listing(listed: Json) -> Listing:
    metadata = listed.get("metadata") or {}
    return Listing(list(listed.get("items") or []), str(metadata.get("resourceVersion") or ""))


class Cluster:
    """The handful of API calls the updater makes, on one authenticated client."""

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

    def _write(self, send: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return send(*args, field_manager=FIELD_MANAGER, _preload_content=False, **kwargs)

    def _answer(
        self, create: Callable[[], Any], replace: Callable[[], Any] | None = None, on: int = 409
    ) -> Answer:
        """Send a write, or `replace` when it is answered `on` (409: the object exists); a
        refusal is an Answer."""
        try:
            try:
                response = create()
            except ApiException as error:
                if replace is None or error.status != on:
                    raise
                response = replace()
        except ApiException as error:
            return Answer(False, int(error.status or 0), api_message(error))
        except UNREACHABLE as error:  # ends the pass: every later write would wait as long
            raise ClusterError(f"cannot reach the API server to write: {error}") from None
        return Answer(True, int(response.status), obj=self._json(response))

    def resize(self, pod: Json, patch: Json, dry_run: bool = False) -> Answer:
        """PATCH pods/resize with a strategic merge patch (containers merge by name)."""
        metadata = pod["metadata"]
        return self._answer(
            lambda: self._write(
                self.core.patch_namespaced_pod_resize,
                metadata["name"],
                metadata["namespace"],
                dict(patch),
                dry_run="All" if dry_run else None,
                _content_type="application/strategic-merge-patch+json",
            )
        )

    def annotate(self, pod: Json, annotations: Mapping[str, str]) -> Answer:
        """Merge `annotations` into the pod's metadata (a JSON merge patch of the pod)."""
        metadata = pod["metadata"]
        return self._answer(
            lambda: self._write(
                self.core.patch_namespaced_pod,
                metadata["name"],
                metadata["namespace"],
                {"metadata": {"annotations": dict(annotations)}},
                _content_type="application/merge-patch+json",
            )
        )

    def annotate_vpa(
        self, namespace: str, name: str, annotations: Mapping[str, str | None]
    ) -> Answer:
        """Merge `annotations` into a VPA's metadata (a JSON merge patch; None deletes)."""
        where = {"group": GROUP, "version": VERSION, "plural": VPA_PLURAL}
        body = {"metadata": {"annotations": dict(annotations)}}
        send = self.custom.patch_namespaced_custom_object
        return self._answer(
            partial(
                self._write,
                send,
                namespace=namespace,
                name=name,
                body=body,
                _content_type="application/merge-patch+json",
                **where,
            )
        )

    def patch_hpa(self, namespace: str, name: str, patch: Json) -> Answer:
        """A JSON merge patch of an autoscaling/v2 HorizontalPodAutoscaler."""
        return self._answer(
            lambda: self._write(
                self.autoscaling.patch_namespaced_horizontal_pod_autoscaler,
                name,
                namespace,
                dict(patch),
                _content_type="application/merge-patch+json",
            )
        )

    def evict(self, pod: Json, dry_run: bool = False) -> Answer:
        """POST pods/eviction: the API server refuses (429) what a PodDisruptionBudget forbids."""
        metadata = pod["metadata"]
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": metadata["name"], "namespace": metadata["namespace"]},
        }
        if dry_run:
            body["deleteOptions"] = {"dryRun": ["All"]}
        return self._answer(
            lambda: self.core.create_namespaced_pod_eviction(
                metadata["name"], metadata["namespace"], cast(Any, body), _preload_content=False
            )
        )

    def write_vpa_status(
        self, vpa: Json, status_over: Callable[[Json | None], Json], attempts: int = 8
    ) -> Answer:
        """Write the VPA's status subresource (its spec is the owner's) without losing what
        other writers put there: `status_over(current status)` is sent with the
        resourceVersion that status was read at, so a write that raced another is refused
        (409) and made again over a fresh read, up to `attempts` times, waiting a little
        longer each time (2.5 s at most in all) so that a busy writer beside it lets it in.
        `vpa` is the object as listed (with its resourceVersion), or just its namespace and
        name (read first)."""
        namespace, name = vpa["metadata"]["namespace"], vpa["metadata"]["name"]
        where = {"group": GROUP, "version": VERSION, "plural": VPA_PLURAL}
        where.update(namespace=namespace, name=name)
        current = vpa if vpa["metadata"].get("resourceVersion") else None
        answer = Answer(False, 0, "not written")
        for attempt in range(attempts):
            if attempt:
                time.sleep(random.uniform(0, 0.01 * 2**attempt))  # jittered: 0.02 s .. 1.28 s
            read = self.custom.get_namespaced_custom_object
            current = current or self._read_if_served(read, f"VPA {namespace}/{name}", **where)
            if current is None:
                return Answer(False, 404, f"VerticalPodAutoscaler {namespace}/{name} is gone")
            version = current["metadata"]["resourceVersion"]
            body = {
                "metadata": {"resourceVersion": version},
                "status": status_over(current.get("status")),
            }
            send = self.custom.patch_namespaced_custom_object_status
            merge = "application/merge-patch+json"
            answer = self._answer(
                partial(self._write, send, body=body, _content_type=merge, **where)
            )
            if answer.status != 409:
                return answer
            current = None  # another writer was first: read what it wrote, then again
        return answer

    def write_config_map(self, namespace: str, name: str, data: Mapping[str, str | None]) -> Answer:
        """Merge the ConfigMap's keys (None deletes one), or create it: where `tailor follow`
        reads its plan. Keys ending in .gz go to binaryData (their values are base64).

        Patched first, and created only when missing (404) by a server-side apply to its
        name: both requests name the object, so RBAC grants `create` and `patch` on this
        ConfigMap alone (a POST to the collection names none)."""
        split: dict[str, dict[str, str | None]] = {"data": {}, "binaryData": {}}
        for key, value in data.items():
            split["binaryData" if key.endswith(".gz") else "data"][key] = value
        kept = {f: {k: v for k, v in keys.items() if v is not None} for f, keys in split.items()}
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            **{f: keys for f, keys in kept.items() if keys},
        }
        return self._answer(
            lambda: self._write(
                self.core.patch_namespaced_config_map,
                name,
                namespace,
                {f: keys for f, keys in split.items() if keys},
                _content_type="application/merge-patch+json",
            ),
            lambda: self._write(
                self.core.patch_namespaced_config_map,
                name,
                namespace,
                cast(Any, body),
                _content_type="application/apply-patch+yaml",
            ),
            on=404,
        )

    def checkpoints(self) -> list[Json]:
        """Every VerticalPodAutoscalerCheckpoint of the cluster (none without the CRD)."""
        return list((self._all_if_served(CHECKPOINT_PLURAL) or {}).get("items") or [])

    def delete_checkpoint(self, namespace: str, name: str) -> Answer:
        custom = self.custom
        return self._answer(
            lambda: custom.delete_namespaced_custom_object(
                GROUP, VERSION, namespace, CHECKPOINT_PLURAL, name, _preload_content=False
            )
        )

    def write_checkpoint(self, checkpoint: Json) -> Answer:
        """Create a VerticalPodAutoscalerCheckpoint, or replace its spec and status."""
        metadata = checkpoint["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        # A merge patch would keep buckets the new histogram no longer has.
        replacement = [
            {"op": "add", "path": "/spec", "value": checkpoint["spec"]},
            {"op": "add", "path": "/status", "value": checkpoint["status"]},
        ]
        custom = self.custom
        return self._answer(
            lambda: self._write(
                custom.create_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                CHECKPOINT_PLURAL,
                dict(checkpoint),
            ),
            lambda: self._write(
                custom.patch_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                CHECKPOINT_PLURAL,
                name,
                cast(Any, replacement),
                _content_type="application/json-patch+json",
            ),
        )
