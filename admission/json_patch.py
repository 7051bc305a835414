"""JSON Patch operations that write a resource stanza (pure): shared by the container and
the pod-level writes of the webhook (`admission.patch`, `admission.pod_level`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tailor.limits import LIMIT_SCALED_RESOURCES, ContainerResources
from tailor.quantity import Quantity

Json = Mapping[str, Any]


def json_pointer(*tokens: str | int) -> str:
    """RFC 6901 pointer: `~` and `/` inside a token (annotation keys) must be escaped."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


def add_operation(path: str, value: object) -> dict[str, Any]:
    """`add` creates the member or replaces it, so it serves for both."""
    return {"op": "add", "path": path, "value": value}


def written_quantity(values: Json | None, resource: str) -> Quantity | None:
    text = (values or {}).get(resource)
    return None if text is None else Quantity.parse(text)


def stanza_operations(
    where: tuple[str | int, ...],
    resources: Json | None,
    new: ContainerResources,
    recommended: Sequence[str],
) -> tuple[list[dict[str, Any]], list[str]]:
    """The adds that bring the stanza at `where` (now `resources`) to `new`."""
    operations: list[dict[str, Any]] = []
    described: list[str] = []
    if resources is None:
        operations.append(add_operation(json_pointer(*where), {}))
    for part, word, values in (
        ("requests", "request", new.requests),
        ("limits", "limit", new.limits),
    ):
        written = (resources or {}).get(part)
        changed = [
            (name, values[name])
            for name in LIMIT_SCALED_RESOURCES
            if name in recommended
            and name in values
            and written_quantity(written, name) != values[name]
        ]
        if not changed:
            continue
        base = (*where, part)
        if written is None:
            operations.append(add_operation(json_pointer(*base), {}))
        for name, amount in changed:
            operations.append(add_operation(json_pointer(*base, name), amount.canonical()))
            described.append(f"{name} {word}")
    return operations, described
