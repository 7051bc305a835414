"""CPU and memory amounts as the kubelet counts them: millicores and bytes.

The kubelet's messages print CPU in millicores and memory in bytes, and
Kubernetes rounds quantities up (`MilliValue`, `Value`), so the simulator
works in integers and converts at the API edge.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tailor.quantity import Quantity, QuantityFormat


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
    return 0 if quantity is None else Quantity.parse(quantity).milli_value()


def memory_bytes(quantity: Any) -> int:
    """'128Mi' / '1G' / 1024 -> bytes, rounded up like Quantity.Value."""
    return 0 if quantity is None else Quantity.parse(quantity).int_value()


def format_cpu(millis: int) -> str:
    """Millicores as the API prints them: '2' for whole cores, else '1500m'."""
    return str(Quantity.from_milli(millis, QuantityFormat.DECIMAL_SI))


def format_memory(amount: int) -> str:
    """Bytes as a binary-SI Quantity prints them: '300Mi', '1536Ki', else decimal ('1500k')."""
    return str(Quantity.from_value(amount, QuantityFormat.BINARY_SI))


def resources_of(resource_list: dict[str, Any] | None) -> Resources:
    """A {'cpu': ..., 'memory': ...} mapping from the API as Resources (missing -> 0)."""
    resource_list = resource_list or {}
    return Resources(
        cpu_millis(resource_list.get("cpu")), memory_bytes(resource_list.get("memory"))
    )


def optional_cores(resource_list: dict[str, Any] | None) -> float | None:
    """CPU from a resource mapping in cores, None when not set (e.g. no CPU limit)."""
    value = (resource_list or {}).get("cpu")
    return None if value is None else cpu_millis(value) / 1000


def optional_memory(resource_list: dict[str, Any] | None) -> int | None:
    """Memory from a resource mapping, None when not set (e.g. no memory limit)."""
    value = (resource_list or {}).get("memory")
    return None if value is None else memory_bytes(value)
