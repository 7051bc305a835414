"""The components' edge to the Kubernetes API: the reads and writes they make, in one place.

The recommender service, the updater and the admission webhook read the same
objects (pods, VPAs, ReplicaSets, LimitRanges); they are handled as the API's own
JSON (dicts), which the pure modules read, so the official client's typed models
are bypassed with `_preload_content=False`. The reads and watches are in
`tailor.kube_reads`; this module adds the writes.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, cast

from kubernetes.client.exceptions import ApiException

from tailor.api.crd import CHECKPOINT_PLURAL, GROUP, VERSION, VPA_PLURAL
from tailor.cluster_port import FIELD_MANAGER, Answer
from tailor.kube_client import (
    ClusterError,
    Listing,
    ResourceVersionGone,
    WatchEvent,
    api_client_from,
    api_message,
    new_watch,
)
from tailor.kube_reads import UNREACHABLE, ClusterReads, Json

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


class Cluster(ClusterReads):
    """The handful of API calls the components make, on one authenticated client: the
    reads of `ClusterReads` and the writes, each answered as an `Answer`."""

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
