"""One resize plan per pod template and targets in a pass (pure).

A workload's replicas share their template, so they ask for the same requests and
limits, and a schedule or a VPA gives them the same targets: their plans are the
same. A plan is a function of the fields of the pod spec read here (each container's
name, resources, restartPolicy and resizePolicy, and the pod-level resources), the
targets and the rules, so a pass plans each such combination once and hands the
(immutable) plan to every pod that has it. Making a plan goes through the shared
capping pipeline (`tailor.capping`, `tailor.limits`) and costs far more than this
lookup.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, NamedTuple

from tailor.pods import APP_FIELD, INIT_FIELD
from updater.act import Planned, checked_plan
from updater.due_targets import Target
from updater.plan import PodRules, ResizePlan
from updater.priority import Rank, priority
from updater.resources import Json

_READ = ("name", "restartPolicy", "resources", "resizePolicy")  # what a plan reads of one


def template(pod: Json) -> Hashable | None:
    """What a plan reads of `pod`, as a key; None for a spec of unexpected shape (planned
    without the memo). Equal texts are equal JSON, so equal keys plan alike."""
    spec = pod.get("spec")
    if type(spec) is not dict:
        return None
    read: list[Any] = [spec.get("resources")]
    for field in (APP_FIELD, INIT_FIELD):
        containers = spec.get(field)
        if containers is not None and type(containers) is not list:
            return None
        for container in containers or ():
            if type(container) is not dict:
                return None
            read.append([container.get(key) for key in _READ])
        read.append(field)
    return repr(read)


class Made(NamedTuple):
    """A plan, and its priority among the pass's resizes (None: it changes nothing)."""

    planned: Planned
    rank: Rank | None


def _made(pod: Json, targets: Mapping[str, Target], rules: PodRules) -> Made:
    planned = checked_plan(pod, targets, rules)
    if isinstance(planned, ResizePlan) and planned.changes:
        return Made(planned, priority(pod, planned))
    return Made(planned, None)


class Plans:
    """The plans of one pass, by pod template, targets and rules."""

    def __init__(self) -> None:
        self._made: dict[Hashable, tuple[PodRules, Made]] = {}

    def plan(self, pod: Json, targets: Mapping[str, Target], rules: PodRules) -> Made:
        """`checked_plan(pod, targets, rules)` and its `priority`, made once for pods alike
        (the priority too reads only the template and the plan)."""
        shape = template(pod)
        if shape is None:
            return _made(pod, targets, rules)
        # the rules' parts by identity: one object each per VPA or namespace in a pass,
        # kept alive with the plan so that an id is not reused
        bounds = (id(rules.resource_policy), id(rules.container_limit_range),
                  id(rules.pod_limit_range))  # fmt: skip
        key = (shape, tuple(targets.items()), bounds)
        found = self._made.get(key)
        if found is None:
            found = self._made[key] = (rules, _made(pod, targets, rules))
        return found[1]
