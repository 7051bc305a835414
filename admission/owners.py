"""ReplicaSets' and Jobs' owner links and HPAs, watched, so a review asks the API server nothing.

A pod names its ReplicaSet (or Job); the VPA names the Deployment (or CronJob) above
it. Upstream's admission controller walks that link through informers; so does this
index: each ReplicaSet and Job is kept as its name and owner references only (a few
hundred bytes, not the whole object with its pod template), listed once and then
changed by each watch event (`admission.watch.Watcher`). A controller the watch has
not delivered yet is read by name, once, through the breaker (`admission.cluster_cache`).
HPAs are kept as their spec, by namespace, for the conflict check (`tailor.hpa`); Nodes as their
labels only, for a DaemonSet pod's node group (`tailor.node_groups`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tailor.kube import WatchEvent

LOG = logging.getLogger("tailor.admission")

Json = Mapping[str, Any]


def owner_links(obj: Json) -> Json | None:
    """The part of a controller a pod's owner walk reads: name, namespace, ownerReferences."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        return None
    owners = metadata.get("ownerReferences")
    kept: dict[str, Any] = {"name": metadata["name"], "namespace": metadata.get("namespace") or ""}
    if isinstance(owners, list):
        kept["ownerReferences"] = owners
    return {"metadata": kept}


def hpa_spec(obj: Json) -> Json | None:
    """The part of an HPA the conflict check reads (`tailor.hpa`): name, namespace and spec.
    Its status changes with every scaling decision, and would change the revision for
    nothing."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        return None
    kept = {"name": metadata["name"], "namespace": metadata.get("namespace") or ""}
    return {"metadata": kept, "spec": obj.get("spec")}


def node_labels(obj: Json) -> Json | None:
    """The part of a Node a review reads: its name and labels (a DaemonSet's node group)."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        return None
    labels = metadata.get("labels")
    kept = {"name": metadata["name"], "labels": labels if isinstance(labels, Mapping) else {}}
    return {"metadata": kept}


class Index:
    """One kind's objects by namespace and name, each reduced by `keep`: the last list, then
    every watch event since.

    Same contract as `admission.watch.Store` (epoch, resourceVersion, replace / apply),
    so one `Watcher` keeps either current; read by name or by namespace, without a lock
    (a namespace's dict is replaced whole, never changed in place). `revision(ns)` changes
    whenever what is kept of `ns` does: an event that leaves it as it was (a ReplicaSet's
    status, a Node's heartbeat) changes nothing (`admission.verdicts`).
    """

    def __init__(self, kind: str, keep: Callable[[Json], Json | None] = owner_links) -> None:
        self.kind, self.keep = kind, keep
        self._objects: dict[str, dict[str, Json]] = {}
        self._lock = threading.Lock()
        self.epoch = 0
        self.resource_version: str | None = None
        self._changes: dict[str, int] = {}

    def revision(self, namespace: str) -> tuple[int, int]:
        """(lists installed, changes to `namespace` since): bumped after each change lands."""
        return self.epoch, self._changes.get(namespace, 0)

    def get(self, namespace: str, name: str) -> Json | None:
        return self._objects.get(namespace, {}).get(name)

    def namespace(self, namespace: str) -> list[Json]:
        return list(self._objects.get(namespace, {}).values())

    def __len__(self) -> int:
        return sum(len(names) for names in self._objects.values())

    @property
    def listed(self) -> bool:
        return self.epoch > 0

    def position(self) -> tuple[int, str | None]:
        with self._lock:
            return self.epoch, self.resource_version

    def replace(self, items: Iterable[Json], resource_version: str | None) -> None:
        objects: dict[str, dict[str, Json]] = {}
        for item in items:
            kept = self.keep(item)
            if kept is not None:
                namespace, name = _key(kept)
                objects.setdefault(namespace, {})[name] = kept
        with self._lock:
            self._objects = objects
            self.resource_version = resource_version
            self.epoch += 1

    def forget_version(self, epoch: int) -> None:
        with self._lock:
            if self.epoch == epoch:
                self.resource_version = None

    def apply(self, event: WatchEvent, epoch: int) -> bool:
        """Apply one event of a watch begun at `epoch`; False when a newer list replaced it."""
        kept = self.keep(event.obj) if isinstance(event.obj, Mapping) else None
        metadata = event.obj.get("metadata") if isinstance(event.obj, Mapping) else None
        version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
        with self._lock:
            if self.epoch != epoch:
                return False
            if kept is not None and event.type in ("ADDED", "MODIFIED", "DELETED"):
                self._put(*_key(kept), None if event.type == "DELETED" else kept)
            if isinstance(version, str) and version:
                self.resource_version = version
        return True

    def learn(self, found: Json) -> None:
        """An object read by name before its watch event came: kept until the event."""
        kept = self.keep(found)
        if kept is not None:
            namespace, name = _key(kept)
            with self._lock:
                if self.get(namespace, name) is None:
                    self._put(namespace, name, kept)

    def _put(self, namespace: str, name: str, kept: Json | None) -> None:
        if self.get(namespace, name) == kept:
            return  # as it was: the namespace's readers and its revision stay
        names = dict(self._objects.get(namespace, {}))
        if kept is None:
            names.pop(name, None)
        else:
            names[name] = kept
        if names:
            self._objects[namespace] = names
        else:
            self._objects.pop(namespace, None)
        self._changes[namespace] = self._changes.get(namespace, 0) + 1


def _key(kept: Json) -> tuple[str, str]:
    metadata = kept["metadata"]
    return str(metadata.get("namespace") or ""), str(metadata["name"])
