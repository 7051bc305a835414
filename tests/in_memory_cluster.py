"""A cluster held in memory: the cluster port (`tailor.cluster_port`) without an API server.

It implements both `UpdaterCluster` and `RecommenderCluster` the way the API server
answers the calls `tailor.kube.Cluster` makes: a resize merges containers by name (a
strategic merge patch) and bumps the pod's generation, an eviction removes the pod, a
status write merges into the VPA (a JSON merge patch), a ConfigMap write merges its keys
(None deletes one), and a write to an object that is not there is refused with 404. A
dry run is answered like the real one and changes nothing. `refuse` makes one verb
answer as a webhook, a quota or a PodDisruptionBudget would (status, message). Every
write is logged in `writes` so a test can say what a pass sent.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tailor.cluster_port import Answer, ClusterError, Json, RecommenderCluster, UpdaterCluster

Obj = dict[str, Any]
Key = tuple[str, str]


def _key(obj: Json) -> Key:
    return str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"])


def merge_patch(target: Obj, patch: Json) -> Obj:
    """RFC 7386: maps merge key by key, None deletes a key, anything else replaces."""
    out = dict(target)
    for name, value in patch.items():
        if value is None:
            out.pop(name, None)
        elif isinstance(value, Mapping) and isinstance(out.get(name), Mapping):
            out[name] = merge_patch(dict(out[name]), value)
        else:
            out[name] = copy.deepcopy(value)
    return out


def _merged_containers(listed: list[Obj], patched: Iterable[Json]) -> list[Obj]:
    """Containers merge by name; within one, `resources` merges as a map (strategic merge)."""
    by_name = {str(c["name"]): i for i, c in enumerate(listed)}
    out = [copy.deepcopy(c) for c in listed]
    for change in patched:
        index = by_name.get(str(change["name"]))
        if index is None:
            raise ValueError(f"container {change['name']!r} is not in the pod")
        out[index] = merge_patch(out[index], change)
    return out


@dataclass
class InMemoryCluster:
    """Objects as the API server stores them, by kind."""

    pod_objects: list[Obj] = field(default_factory=list)
    nodes_by_name: dict[str, Obj] = field(default_factory=dict)
    vpa_objects: list[Obj] = field(default_factory=list)
    hpa_objects: list[Obj] = field(default_factory=list)
    limit_range_objects: list[Obj] = field(default_factory=list)
    controller_objects: dict[str, dict[Key, Obj]] = field(default_factory=dict)
    checkpoint_objects: dict[Key, Obj] = field(default_factory=dict)
    config_maps: dict[Key, dict[str, str]] = field(default_factory=dict)
    refuse: dict[str, tuple[int, str]] = field(default_factory=dict)  # verb -> (status, msg)
    unreadable: dict[str, str] = field(default_factory=dict)  # read -> ClusterError message
    writes: list[tuple[str, str, bool]] = field(default_factory=list)  # (verb, key, dry run)

    # reads -------------------------------------------------------------------------------

    def _read(self, what: str) -> None:
        if what in self.unreadable:
            raise ClusterError(self.unreadable[what])

    def pods(self) -> list[Json]:
        self._read("pods")
        return [copy.deepcopy(p) for p in self.pod_objects]

    def vpas(self) -> list[Json]:
        self._read("vpas")
        return [copy.deepcopy(v) for v in self.vpa_objects]

    def hpas(self, namespace: str | None = None) -> list[Json]:
        self._read("hpas")
        found = [h for h in self.hpa_objects if namespace in (None, _key(h)[0])]
        return [copy.deepcopy(h) for h in found]

    def controllers(self, kind: str) -> dict[tuple[str, str], Json]:
        self._read(kind)
        return {k: copy.deepcopy(o) for k, o in self.controller_objects.get(kind, {}).items()}

    def controller(self, kind: str, namespace: str, name: str) -> Json | None:
        self._read(kind)
        found = self.controller_objects.get(kind, {}).get((namespace, name))
        return copy.deepcopy(found)

    def nodes(self) -> dict[str, Json]:
        self._read("nodes")
        return {k: copy.deepcopy(n) for k, n in self.nodes_by_name.items()}

    def limit_ranges(self) -> list[Json]:
        self._read("limitranges")
        return [copy.deepcopy(r) for r in self.limit_range_objects]

    def checkpoints(self) -> list[Json]:
        self._read("checkpoints")
        return [copy.deepcopy(c) for c in self.checkpoint_objects.values()]

    # writes ------------------------------------------------------------------------------

    def _refused(self, verb: str, key: Key, dry_run: bool = False) -> Answer | None:
        self.writes.append((verb, f"{key[0]}/{key[1]}", dry_run))
        if verb in self.refuse:
            status, message = self.refuse[verb]
            return Answer(False, status, message)
        return None

    def _pod_index(self, key: Key) -> int | None:
        return next((i for i, p in enumerate(self.pod_objects) if _key(p) == key), None)

    def resize(self, pod: Json, patch: Json, dry_run: bool = False) -> Answer:
        key = _key(pod)
        refused = self._refused("resize", key, dry_run)
        if refused is not None:
            return refused
        index = self._pod_index(key)
        if index is None:
            return Answer(False, 404, f'pods "{key[1]}" not found')
        resized = copy.deepcopy(self.pod_objects[index])
        spec = resized["spec"]
        for name, containers in (patch.get("spec") or {}).items():
            try:
                spec[name] = _merged_containers(spec.get(name) or [], containers)
            except ValueError as error:
                return Answer(False, 422, str(error))
        metadata = resized["metadata"]
        metadata["generation"] = int(metadata.get("generation") or 1) + 1
        if not dry_run:
            self.pod_objects[index] = resized
        return Answer(True, 200, obj=copy.deepcopy(resized))

    def evict(self, pod: Json, dry_run: bool = False) -> Answer:
        key = _key(pod)
        refused = self._refused("evict", key, dry_run)
        if refused is not None:
            return refused
        index = self._pod_index(key)
        if index is None:
            return Answer(False, 404, f'pods "{key[1]}" not found')
        if not dry_run:
            del self.pod_objects[index]
        return Answer(True, 201)

    def annotate(self, pod: Json, annotations: Mapping[str, str]) -> Answer:
        key = _key(pod)
        refused = self._refused("annotate", key)
        if refused is not None:
            return refused
        index = self._pod_index(key)
        if index is None:
            return Answer(False, 404, f'pods "{key[1]}" not found')
        patch = {"metadata": {"annotations": dict(annotations)}}
        self.pod_objects[index] = merge_patch(self.pod_objects[index], patch)
        return Answer(True, 200, obj=copy.deepcopy(self.pod_objects[index]))

    def annotate_vpa(
        self, namespace: str, name: str, annotations: Mapping[str, str | None]
    ) -> Answer:
        key = (namespace, name)
        refused = self._refused("annotate-vpa", key)
        if refused is not None:
            return refused
        for index, found in enumerate(self.vpa_objects):
            if _key(found) == key:
                patch = {"metadata": {"annotations": dict(annotations)}}
                self.vpa_objects[index] = merge_patch(found, patch)
                return Answer(True, 200, obj=copy.deepcopy(self.vpa_objects[index]))
        return Answer(False, 404, f'verticalpodautoscalers "{name}" not found')

    def patch_hpa(self, namespace: str, name: str, patch: Json) -> Answer:
        key = (namespace, name)
        refused = self._refused("patch-hpa", key)
        if refused is not None:
            return refused
        for index, found in enumerate(self.hpa_objects):
            if _key(found) == key:
                self.hpa_objects[index] = merge_patch(found, patch)
                return Answer(True, 200, obj=copy.deepcopy(self.hpa_objects[index]))
        return Answer(False, 404, f'horizontalpodautoscalers "{name}" not found')

    def write_vpa_status(
        self, vpa: Json, status_over: Callable[[Json | None], Json], attempts: int = 8
    ) -> Answer:
        key = _key(vpa)
        refused = self._refused("vpa-status", key)
        if refused is not None:
            return refused
        for index, found in enumerate(self.vpa_objects):
            if _key(found) == key:  # one writer at a time here: the current status is this one
                status = status_over(found.get("status"))
                self.vpa_objects[index] = merge_patch(found, {"status": status})
                return Answer(True, 200, obj=copy.deepcopy(self.vpa_objects[index]))
        return Answer(False, 404, f'verticalpodautoscalers "{key[1]}" not found')

    def write_checkpoint(self, checkpoint: Json) -> Answer:
        key = _key(checkpoint)
        refused = self._refused("checkpoint", key)
        if refused is not None:
            return refused
        created = key not in self.checkpoint_objects
        self.checkpoint_objects[key] = copy.deepcopy(dict(checkpoint))
        return Answer(True, 201 if created else 200, obj=copy.deepcopy(dict(checkpoint)))

    def delete_checkpoint(self, namespace: str, name: str) -> Answer:
        key = (namespace, name)
        refused = self._refused("delete-checkpoint", key)
        if refused is not None:
            return refused
        if self.checkpoint_objects.pop(key, None) is None:
            return Answer(False, 404, f'verticalpodautoscalercheckpoints "{name}" not found')
        return Answer(True, 200)

    def write_config_map(self, namespace: str, name: str, data: Mapping[str, str | None]) -> Answer:
        key = (namespace, name)
        refused = self._refused("configmap", key)
        if refused is not None:
            return refused
        kept = self.config_maps.setdefault(key, {})
        for name_, value in data.items():
            if value is None:
                kept.pop(name_, None)
            else:
                kept[name_] = value
        return Answer(True, 200)


def _ports(cluster: InMemoryCluster) -> tuple[UpdaterCluster, RecommenderCluster]:
    """mypy checks here that the in-memory cluster implements both ports."""
    return cluster, cluster
