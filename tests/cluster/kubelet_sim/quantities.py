"""CPU and memory amounts as the kubelet counts them: millicores and bytes.

The kubelet's messages print CPU in millicores and memory in bytes, and
Kubernetes rounds quantities up (`MilliValue`, `Value`), so the simulator
works in integers and converts at the API edge.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from kubernetes.utils import parse_quantity

_BINARY_SUFFIXES = (
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)
_DECIMAL_SUFFIXES = (
    ("E", 10**18),
    ("P", 10**15),
    ("T", 10**12),
    ("G", 10**9),
    ("M", 10**6),
    ("k", 10**3),
)


class Resources(NamedTuple):
    """CPU in millicores and memory in bytes."""

    cpu: int = 0
    memory: int = 0

    def __add__(self, other: object) -> Resources:
        if not isinstance(other, Resources):
            return NotImplemented
        return Resources(self.cpu + other.cpu, self.memory + other.memory)

    def maximum(self, other: Resources) -> Resources:
        """Per-resource maximum."""
        return Resources(max(self.cpu, other.cpu), max(self.memory, other.memory))


def cpu_millis(quantity: Any) -> int:
    """'1500m' / '2' / 0.5 -> millicores, rounded up like Quantity.MilliValue."""
    if quantity is None:
        return 0
    return math.ceil(parse_quantity(quantity) * 1000)


def memory_bytes(quantity: Any) -> int:
    """'128Mi' / '1G' / 1024 -> bytes, rounded up like Quantity.Value."""
    if quantity is None:
        return 0
    return math.ceil(parse_quantity(quantity))


def format_cpu(millis: int) -> str:
    """Millicores as the API prints them: '2' for whole cores, else '1500m'."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def format_memory(amount: int) -> str:
    """Bytes as a binary-SI Quantity prints them: '300Mi', '1536Ki', else decimal ('1500k').

    Like Quantity.String(): binary suffixes when exact and |amount| >= 1024,
    otherwise the decimal-SI form.
    """
    if abs(amount) >= 1024:
        for suffix, size in _BINARY_SUFFIXES:
            if amount % size == 0:
                return f"{amount // size}{suffix}"
    for suffix, size in _DECIMAL_SUFFIXES:
        if amount != 0 and amount % size == 0:
            return f"{amount // size}{suffix}"
    return str(amount)


def resources_of(resource_list: dict[str, Any] | None) -> Resources:
    """A {'cpu': ..., 'memory': ...} mapping from the API as Resources (missing -> 0)."""
    resource_list = resource_list or {}
    return Resources(
        cpu_millis(resource_list.get("cpu")), memory_bytes(resource_list.get("memory"))
    )


def optional_memory(resource_list: dict[str, Any] | None) -> int | None:
    """Memory from a resource mapping, None when not set (e.g. no memory limit)."""
    value = (resource_list or {}).get("memory")
    return None if value is None else memory_bytes(value)
