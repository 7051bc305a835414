"""A pod's verdict, decided once and given again to the identical pods that follow (pure).

A Deployment scaled to hundreds sends hundreds of identical reviews at once: its
ReplicaSet creates every pod from one template, and at admission they differ in nothing
the decision reads (the API server names them after admission, from generateName). A
verdict depends only on the pod as sent, its namespace, and what the cluster view holds
for that namespace, so it is kept under the pod's JSON with the view's revision of the
namespace (`ClusterCache.revision`: its VPAs, LimitRanges, owner links and HPAs, and the
Nodes' labels), read before deciding. An identical pod gets it again only while that
revision holds: a VPA's new recommendation or policy, a LimitRange changed, a new
ReplicaSet, and the next pod is decided afresh. A verdict given because the cluster could
not be read, or after an error of ours (`Verdict.lasting` False), is never kept.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Protocol, runtime_checkable

import orjson

from admission.review import AdmissionRequest, Verdict

# distinct pods kept: a burst is a few templates at once; a pod's JSON is a few KiB
MAX_KEPT = 256


@runtime_checkable
class Revised(Protocol):
    """A cluster view that says when what it holds for a namespace changed."""

    def revision(self, namespace: str) -> Hashable:
        """A value that differs after any change a review in `namespace` could read."""
        ...


class VerdictCache:
    """The last `size` pods' verdicts, each with the revision it was decided at."""

    def __init__(self, view: Revised, size: int = MAX_KEPT) -> None:
        self.view, self.size = view, size
        self._kept: dict[tuple[str, bytes], tuple[Hashable, Verdict]] = {}
        self.reused = 0

    def verdict(self, request: AdmissionRequest, decide: Callable[[], Verdict]) -> Verdict:
        """The verdict kept for this pod at the view's current revision, else `decide()`'s."""
        key = (request.namespace, orjson.dumps(request.obj))
        revision = self.view.revision(request.namespace)  # before deciding: a change
        kept = self._kept.get(key)  # landing meanwhile makes the next pod decide again
        if kept is not None and kept[0] == revision:
            self.reused += 1
            return kept[1]
        verdict = decide()
        if verdict.lasting:
            if key not in self._kept and len(self._kept) >= self.size:
                del self._kept[next(iter(self._kept))]  # the oldest kept
            self._kept[key] = (revision, verdict)
        return verdict
