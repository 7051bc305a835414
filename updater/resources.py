"""Reading a pod's requests and limits as whole millicores and bytes (pure).

The updater compares what a pod asks for with what a schedule wants, and sums
requests on a node; integers in the units Kubernetes rounds to make those
comparisons exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from tailor.limits import defaulted_requests
from tailor.quantity import Quantity

Json = Mapping[str, Any]
RESOURCES = ("cpu", "memory")


class Amounts(NamedTuple):
    """CPU in millicores and memory in bytes; the pair the scheduler sums per node. A tuple
    (a pass makes tens of thousands: a frozen dataclass took three times as long to make);
    `+` and `-` add and subtract per resource, as amounts do, not as tuples join."""

    cpu_millis: int = 0
    memory_bytes: int = 0

    def __add__(self, other: Amounts) -> Amounts:  # type: ignore[override]
        return Amounts(self[0] + other[0], self[1] + other[1])

    def __sub__(self, other: Amounts) -> Amounts:
        return Amounts(self[0] - other[0], self[1] - other[1])

    def larger(self, other: Amounts) -> Amounts:
        """Per resource, the larger of the two (the scheduler's max rules)."""
        return Amounts(
            max(self.cpu_millis, other.cpu_millis), max(self.memory_bytes, other.memory_bytes)
        )

    def get(self, resource: str) -> int:
        return self.cpu_millis if resource == "cpu" else self.memory_bytes


def amount(resource: str, text: object) -> int:
    """A quantity in the resource's unit: millicores (rounded up) or bytes (rounded up)."""
    if type(text) is str:  # the API's form; the few texts of a cluster repeat on every pod
        return _text_amount(resource, text)
    quantity = Quantity.parse(text)  # type: ignore[arg-type]
    return quantity.milli_value() if resource == "cpu" else quantity.int_value()


@lru_cache(maxsize=4096)
def _text_amount(resource: str, text: str) -> int:
    quantity = Quantity.parse(text)
    return quantity.milli_value() if resource == "cpu" else quantity.int_value()


def resource_list(values: Mapping[str, Any] | None) -> dict[str, int]:
    """cpu and memory of a ResourceList (other resources are not ours to change)."""
    found: dict[str, int] = {}
    if values:
        for resource in RESOURCES:
            if resource in values:
                found[resource] = amount(resource, values[resource])
    return found


_ABSENT = object()  # a resource a ResourceList does not name (counts 0)


def amount_pair(values: Mapping[str, Any] | None) -> tuple[int, int]:
    """cpu and memory of a ResourceList as (millicores, bytes), 0 for one not there: what
    `to_amounts(resource_list(values))` gives, without the dict between."""
    if not values:
        return 0, 0
    return _pair(values.get("cpu", _ABSENT), values.get("memory", _ABSENT))


def _pair(cpu: object, memory: object) -> tuple[int, int]:
    """The amounts of these amounts (`_ABSENT`: 0). The pods of a fleet share a few request
    texts, so a pair of texts is parsed once (`_text_pair`); anything else, a number or a
    boolean equal to one among them, is read as it is."""
    if (type(cpu) is str or cpu is _ABSENT) and (type(memory) is str or memory is _ABSENT):
        return _text_pair(cpu, memory)
    return _amounts_of(cpu, memory)


@lru_cache(maxsize=4096)
def _text_pair(cpu: object, memory: object) -> tuple[int, int]:
    return _amounts_of(cpu, memory)


def _amounts_of(cpu: object, memory: object) -> tuple[int, int]:
    return (
        0 if cpu is _ABSENT else amount("cpu", cpu),
        0 if memory is _ABSENT else amount("memory", memory),
    )


def requested_pair(container: Json) -> tuple[int, int]:
    """`requests_of` as (millicores, bytes), 0 for a resource not requested."""
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    if type(requests) is not dict or type(limits) is not dict:
        defaulted, limits = defaulted_requests(container)
        found = amount_pair(defaulted)
        amount_pair(limits)  # read for its errors only
        return found
    # a limit stands in for a missing request (`tailor.limits.defaulted_requests`)
    cpu = requests["cpu"] if "cpu" in requests else limits.get("cpu", _ABSENT)
    memory = requests["memory"] if "memory" in requests else limits.get("memory", _ABSENT)
    found = _pair(cpu, memory)
    if limits:
        amount_pair(limits)  # read for its errors only
    return found


def to_amounts(values: Mapping[str, int]) -> Amounts:
    return Amounts(values.get("cpu", 0), values.get("memory", 0))


def requests_of(container: Json) -> dict[str, int]:
    """A container's requests, a limit standing in for a missing request (the shared rule,
    `tailor.limits.defaulted_requests`). Raises QuantityError on an unreadable request or
    limit, as `ContainerResources.of_container` does."""
    defaulted, limits = defaulted_requests(container)
    found = resource_list(defaulted)
    resource_list(limits)  # read for its errors only
    return found


def limits_of(container: Json) -> dict[str, int]:
    defaulted, limits = defaulted_requests(container)
    resource_list(defaulted)  # read for its errors only
    return resource_list(limits)


def sum_amounts(items: Iterable[Amounts]) -> Amounts:
    total = Amounts()
    for item in items:
        total = total + item
    return total


def relative_change(before: Mapping[str, float], after: Mapping[str, float]) -> float:
    """Upstream's updater measure of how far a pod's requests move: over cpu and memory,
    |after - before| / before of the pod's summed requests (a resource not requested counts
    for nothing). It orders the pods of a pass and decides when a long-lived pod updates."""
    return sum(
        abs(after.get(r, 0) - before[r]) / before[r] for r in RESOURCES if before.get(r, 0) > 0
    )
