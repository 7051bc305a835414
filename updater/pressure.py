"""The updater's reaction to memory pressure: raise the memory in place before the OOM kill
(pure; the readings come from Prometheus at the CLI's edge).

A container under sustained pressure (`tailor.memory_pressure`: its stalled share over
the rule's window) has its memory request raised at once to what an OOM kill would have
given it, its limit kept in proportion; the VPA's policy (maxAllowed) and the
LimitRanges bound it as they bound every resize, and it is never lowered by it. The
raise is recorded on the pod (`PRESSURE_RAISED`): for `HOLD` the updater plans no memory
below it, whatever the schedule or the recommendation says, so the next pass does not
take back what pressure just won (the recommender reads the same episode as an OOM-like
sample and catches up); and the pressure of the window before a raise, which the
window's average still shows, does not raise it twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from tailor.memory_pressure import PressureReading, PressureRule
from tailor.pod_level import pod_level_resources
from tailor.pods import sized_containers
from tailor.quantity import QuantityError
from updater.due_targets import Target, without_contested
from updater.governance import Governance
from updater.plan import ContainerResize, ResizePlan, Skipped
from updater.pod_plan import plan_pod_resize
from updater.resources import Json, limits_of, requests_of, resource_list

#: pod annotation: the memory requests pressure raised, "container=bytes@unix-seconds ..."
PRESSURE_RAISED = "kube-tailor.io/memory-pressure-raised"
#: how long a raise stays a floor for the updater's own plans
HOLD = timedelta(days=1)
PRESSURE = "memory pressure"
NOT_EVICTED = "not evicted: a memory-pressure raise is made in place only"
ContainerKey = tuple[str, str, str]  # namespace, pod, container


@dataclass(frozen=True)
class Readings:
    """One pass's readings, (namespace, pod, container) -> PressureReading, and the rule."""

    rule: PressureRule
    by_container: Mapping[ContainerKey, PressureReading]


@dataclass(frozen=True)
class MemoryPressure:
    """The rule, and how a pass reads the containers' pressure (once per pass)."""

    rule: PressureRule
    read: Callable[[], Mapping[ContainerKey, PressureReading]]

    def readings(self) -> Readings:
        return Readings(self.rule, self.read())


@dataclass(frozen=True)
class Raised:
    """A container's request raised by pressure, and when."""

    memory: float
    at: float  # UNIX seconds


def raised_on(pod: Json) -> dict[str, Raised]:
    """The raises recorded on `pod` (entries someone else mangled are skipped)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    found: dict[str, Raised] = {}
    for part in str(annotations.get(PRESSURE_RAISED, "")).split():
        name, _, value = part.partition("=")
        memory, _, at = value.partition("@")
        try:
            raise_ = Raised(float(memory), float(at))
        except ValueError:
            continue
        if name and math.isfinite(raise_.memory) and math.isfinite(raise_.at):
            found[name] = raise_
    return found


def _held(pod: Json, at: float) -> dict[str, Raised]:
    """The raises recorded on `pod` still held at `at` (UNIX seconds)."""
    return {n: r for n, r in raised_on(pod).items() if at - r.at < HOLD.total_seconds()}


def recorded(pod: Json, plan: ResizePlan, now: datetime) -> str:
    """The annotation's value after `plan` was applied at `now`: its memory requests, and
    the earlier raises of other containers still held."""
    at = now.astimezone(UTC).timestamp()
    kept = _held(pod, at)
    for container in plan.containers:
        memory = container.requests.get("memory")
        if memory is not None:
            kept[container.name] = Raised(memory.int_value(), at)
    return " ".join(f"{name}={r.memory:.0f}@{r.at:.0f}" for name, r in sorted(kept.items()))


def floored(pod: Json, targets: Mapping[str, Target], now: datetime) -> Mapping[str, Target]:
    """`targets` with no memory request below a raise held on the pod (within HOLD); a
    floored request keeps the limit in proportion, as the raise set it (a planned limit
    under it would bring the pressure back)."""
    annotations = (pod.get("metadata") or {}).get("annotations")
    if not annotations or PRESSURE_RAISED not in annotations:  # most pods: no raise held
        return targets
    held = _held(pod, now.astimezone(UTC).timestamp())
    out = dict(targets)
    for name, target in targets.items():
        floor = held[name].memory if name in held else None
        if floor is not None and target.memory_bytes is not None and target.memory_bytes < floor:
            out[name] = replace(target, memory_bytes=floor, memory_limit_bytes=None)
    return out


@dataclass(frozen=True)
class PressureRaise:
    """The memory targets pressure calls for, and what the report says of it."""

    targets: Mapping[str, Target]
    reason: str


def _shown(memory: float) -> str:
    return f"{memory / 2**20:.0f}Mi"


def pressure_raise(
    pod: Json,
    namespace: str,
    readings: Mapping[ContainerKey, PressureReading],
    rule: PressureRule,
    now: datetime,
) -> PressureRaise | None:
    """The raise the pod's containers under sustained pressure call for (None: none is).

    A container raised less than one window ago is left out: its window still averages
    the stalls from before the raise. Containers without a memory request are left out
    too (the API server refuses a resize that adds one), and so are those sharing a
    pod-level budget (`spec.resources`) for the same reason: the OOM path sizes them.
    """
    name = str((pod.get("metadata") or {}).get("name"))
    at = now.astimezone(UTC).timestamp()
    raised = raised_on(pod)
    targets: dict[str, Target] = {}
    said = []
    for container in sized_containers(pod):
        reading = readings.get((namespace, name, container.name))
        if reading is None or not rule.sustained(reading.stalled_share):
            continue
        last = raised.get(container.name)
        if last is not None and at - last.at < rule.window_seconds:
            continue
        request = requests_of(container.spec).get("memory")
        if request is None:
            continue
        working_set = reading.working_set if math.isfinite(reading.working_set) else 0.0
        memory = rule.raised_request(request, working_set)
        targets[container.name] = Target(None, memory, None)
        said.append(
            f"{container.name} stalled {reading.stalled_share:.0%} of the last "
            f"{rule.window_seconds} s at {_shown(working_set)}: memory {_shown(request)} -> "
            f"{_shown(memory)}"
        )
    if not targets:
        return None
    return PressureRaise(targets, f"{PRESSURE} ({'; '.join(said)})")


def _lowered(name: str, before: tuple[int | None, int | None], change: ContainerResize) -> str:
    after = (change.requests.get("memory"), change.limits.get("memory"))
    for kind, old, new in zip(("request", "limit"), before, after, strict=True):
        if old is not None and new is not None and new.int_value() < old:
            return f"{name}'s memory {kind} is above what its policy allows"
    return ""


def lowered(pod: Json, plan: ResizePlan) -> str | None:
    """What of `plan` would lower a memory request or limit, a container's or the pod's
    (a raise never does: the VPA's maxAllowed below what the pod asks already); None
    when nothing is lowered."""
    specs = {c.name: c.spec for c in sized_containers(pod)}
    for change in plan.containers:
        spec = specs.get(change.name, {})
        before = (requests_of(spec).get("memory"), limits_of(spec).get("memory"))
        if why := _lowered(change.name, before, change):
            return why
    stanza = pod_level_resources(pod)
    if plan.pod_level is not None and stanza is not None:
        before = (resource_list(stanza.requests).get("memory"),
                  resource_list(stanza.limits).get("memory"))  # fmt: skip
        return _lowered("the pod", before, plan.pod_level) or None
    return None


@dataclass(frozen=True)
class PressurePlan:
    """A pod's raise this pass: its targets and plan, or why it is not raised (`refused`)."""

    targets: Mapping[str, Target]
    planned: ResizePlan | Skipped | QuantityError
    reason: str
    refused: str | None = None


def plan_pressure_raise(
    pod: Json,
    namespace: str,
    governance: Governance,
    readings: Readings | None,
    now: datetime,
) -> PressurePlan | None:
    """The raise of a pod the updater resizes in place (None: no container calls for one,
    or no readings: the reaction is off).

    Bounded as every resize is (the VPA's policy, LimitRanges), never lowering anything,
    and leaving what an HPA scales on to the HPA.
    """
    if readings is None or governance.leave_alone or governance.recreate:
        return None
    found = pressure_raise(pod, namespace, readings.by_container, readings.rule, now)
    if found is None:
        return None
    targets = without_contested(found.targets, governance.contested)
    if not targets:
        return None
    try:
        planned: ResizePlan | Skipped | QuantityError = plan_pod_resize(
            pod, targets, governance.rules
        )
    except QuantityError as error:
        planned = error
    refused = None
    if isinstance(planned, ResizePlan):
        why = lowered(pod, planned)
        if why is None and not planned.changes:
            why = "its policy allows no more memory"
        refused = None if why is None else f"{found.reason}; not raised: {why}"
    return PressurePlan(targets, planned, found.reason, refused)
