"""What the recommender says in Kubernetes Events, on the VPA it writes.

`kubectl describe vpa` shows the status; the Events say when and why it moved: a
recommendation whose target changed (`RecommendationChanged`, old -> new per
container), and an OOM kill the memory recommendation took into account
(`OOMKillTakenIntoAccount`, on the VPA and on the killed pod). Upstream's recommender
records neither. A kill is told once per service process (it stays in the history
for days, and every pass reads it again); the recording rule is `tailor.events`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from tailor.events import NORMAL, WARNING, EventRecorder, KubeEventSink, ObjectRef, Recorder

COMPONENT = "kube-tailor-recommender"
CHANGED = "RecommendationChanged"
OOM_TAKEN = "OOMKillTakenIntoAccount"
Json = Mapping[str, Any]
KILL_COLUMNS = {"namespace", "workload", "pod", "container", "timestamp"}


def recommender_events(core: object) -> EventRecorder:
    """The recommender's recorder, writing through a CoreV1Api."""
    return EventRecorder(KubeEventSink(core), COMPONENT)


def _targets(recommendation: Json | None) -> dict[str, dict[str, str]]:
    found = (recommendation or {}).get("containerRecommendations") or []
    return {str(c.get("containerName")): dict(c.get("target") or {}) for c in found}


def changes(before: Json | None, after: Json | None) -> str:
    """ "app: cpu 250m -> 400m, memory 256Mi -> 300Mi; ..." for the targets that moved."""
    old, new = _targets(before), _targets(after)
    said = []
    for container in sorted(set(old) | set(new)):
        was, now = old.get(container, {}), new.get(container, {})
        moved = [
            f"{resource} {was.get(resource, 'none')} -> {now.get(resource, 'none')}"
            for resource in ("cpu", "memory")
            if was.get(resource) != now.get(resource)
        ]
        if moved:
            said.append(f"{container}: {', '.join(moved)}")
    return "; ".join(said)


class RecommenderEvents:
    """The recommender's Events across passes (the kills already told)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.told: set[tuple[str, str, str, str]] = set()

    def after_write(
        self,
        vpa: ObjectRef,
        before: Json | None,
        after: Json | None,
        workloads: Iterable[str],
        ooms: pd.DataFrame | None,
    ) -> None:
        """The Events of one VPA whose status was just written (`before`, `after`: its
        recommendation); `ooms`: the pass's OOM kills (namespace, workload, pod,
        container, timestamp, memory)."""
        moved = changes(before, after)
        if moved:
            self.recorder.record(vpa, NORMAL, CHANGED, f"kube-tailor recommends {moved}")
        if ooms is None or ooms.empty or not after or not set(ooms.columns) >= KILL_COLUMNS:
            return
        mine = ooms[(ooms["namespace"] == vpa.namespace) & ooms["workload"].isin(set(workloads))]
        targets = _targets(after)
        for kill in mine.itertuples(index=False):
            key = (vpa.namespace, str(kill.pod), str(kill.container), str(kill.timestamp))
            if key in self.told or str(kill.container) not in targets:
                continue
            self.told.add(key)
            memory = targets[str(kill.container)].get("memory", "none")
            when: Any = kill.timestamp
            text = (
                f"container {kill.container} of pod {kill.pod} was OOM-killed at "
                f"{pd.Timestamp(when):%Y-%m-%d %H:%M:%S} UTC; the memory "
                f"recommendation takes it into account: target {memory}"
            )
            self.recorder.record(vpa, WARNING, OOM_TAKEN, text)
            pod = ObjectRef("v1", "Pod", vpa.namespace, str(kill.pod))
            self.recorder.record(pod, WARNING, OOM_TAKEN, text)
