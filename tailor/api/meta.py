"""Shared pieces of the typed API objects: the base model, metadata, timestamps, resources.

Every model reads and writes the API server's JSON: camelCase keys, quantity
strings, RFC 3339 timestamps, unset fields omitted (`to_api()`).

Unknown fields are KEPT (`extra="allow"`) and written back unchanged: a newer API
server or a newer upstream VPA may send fields we do not model (e.g.
`startupBoost`), and a read-modify-write through our models must not drop them.
Typos are caught where it matters: our CRD schema is structural, so the API server
prunes or rejects unknown fields before we ever read them, and every field we do
model is validated (enums, quantities, timestamps).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Protocol, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import core_schema

from tailor.quantity import NANOS_PER_UNIT, Quantity, cpu_quantity, memory_quantity

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"


class APIModel(BaseModel):
    """Base of every API model: camelCase JSON, unknown fields preserved."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Self:
        """Build from the API server's JSON (a parsed dict); raises ValidationError."""
        return cls.model_validate(data)

    def to_api(self) -> dict[str, Any]:
        """The JSON the API server expects: camelCase, unset fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def valid_among(cls, items: Iterable[Mapping[str, Any]]) -> list[Self]:
        """The objects of a list that validate: a service skips a malformed one, not the list."""
        return cls.sorted_out(items)[0]

    @classmethod
    def sorted_out(cls, items: Iterable[Mapping[str, Any]]) -> tuple[list[Self], list[str]]:
        """The objects that validate, and for each one that does not "namespace/name: why"
        (a service reports what it skips)."""
        valid, invalid = [], []
        for item in items:
            try:
                valid.append(cls.model_validate(item))
            except ValidationError as error:
                metadata = item.get("metadata") if isinstance(item, Mapping) else None
                metadata = metadata if isinstance(metadata, Mapping) else {}
                first = error.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                name = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
                invalid.append(f"{name}: {where}: {first['msg']}")
        return valid, invalid


def _require_aware_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamps must carry a timezone (the API uses RFC 3339 with 'Z')")
    return value.astimezone(UTC)


def _format_rfc3339(value: datetime) -> str:
    """Whole seconds in UTC with 'Z', as metav1.Time is written."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Timestamp = Annotated[
    datetime,
    AfterValidator(_require_aware_utc),
    PlainSerializer(_format_rfc3339, return_type=str, when_used="always"),
]
"""An RFC 3339 time (metav1.Time): read with any offset, written as UTC seconds + 'Z'."""

#: An RFC 3339 date-time, as the API server and upstream write it. Go's time.Parse refuses
#: all this refuses (a date alone, a space or lowercase 't', no 'Z' or +hh:mm offset).
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
#: Go's zero time.Time, which metav1.Time writes as null.
GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def _decode_meta_time(value: object) -> datetime | None:
    """metav1.Time as Go decodes it: RFC 3339 text, or null for the zero time.

    A number is a decode error in Go; pydantic's lax datetime took 12345 as a UNIX
    time. "" also reads as unset (as metav1.Time reads query parameters), and so does
    Go's zero time, which Go writes as null.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):  # built in code, not decoded from JSON
        parsed = value
    elif isinstance(value, str) and _RFC3339.fullmatch(value):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as error:
            raise ValueError(f"{value!r} is not a valid time: {error}") from None
    else:
        raise ValueError(f"{value!r} is not an RFC 3339 time")
    try:
        utc = _require_aware_utc(parsed)
    except OverflowError:
        raise ValueError(f"{value!r} is before Go's zero time") from None
    return None if utc == GO_ZERO_TIME else utc


def _encode_meta_time(value: datetime | None) -> str | None:
    return None if value is None else _format_rfc3339(value)


MetaTime = Annotated[
    datetime | None,
    PlainValidator(_decode_meta_time),
    PlainSerializer(_encode_meta_time, return_type=str | None, when_used="always"),
]
"""metav1.Time decoded exactly as Go does; None is the zero time (written as null/omitted)."""


def granule(resource: str) -> int:
    """Nanos in one step of a resource: a millicore for CPU, one unit for everything else."""
    return NANOS_PER_UNIT // 1000 if resource == RESOURCE_CPU else NANOS_PER_UNIT


class ResourceList(dict[str, Quantity]):
    """Resource name -> quantity (requests, limits, targets, minAllowed...).

    Values are parsed on construction, so `ResourceList({"cpu": "250m"})` works.
    """

    def __init__(
        self,
        items: Mapping[str, Quantity | str | int | float] | None = None,
        /,
        **named: Quantity | str | int | float,
    ) -> None:
        super().__init__()
        given = {**(items or {}), **named} if named else items or {}  # no copy when unnamed
        for name, amount in given.items():
            self[name] = Quantity.parse(amount)

    @classmethod
    def from_amounts(
        cls, cpu_cores: float | None = None, memory_bytes: float | None = None
    ) -> ResourceList:
        """From numbers, rounded up as the VPA writes them (1m CPU, 1 byte memory)."""
        result = cls()
        if cpu_cores is not None:
            result[RESOURCE_CPU] = cpu_quantity(cpu_cores)
        if memory_bytes is not None:
            result[RESOURCE_MEMORY] = memory_quantity(memory_bytes)
        return result

    @property
    def cpu(self) -> Quantity | None:
        return self.get(RESOURCE_CPU)

    @property
    def memory(self) -> Quantity | None:
        return self.get(RESOURCE_MEMORY)

    def cpu_cores(self) -> float | None:
        """CPU in cores, or None when the list has no cpu entry."""
        return None if self.cpu is None else float(self.cpu)

    def memory_bytes(self) -> float | None:
        """Memory in bytes, or None when the list has no memory entry."""
        return None if self.memory is None else float(self.memory)

    def to_api(self) -> dict[str, str]:
        return {name: amount.canonical() for name, amount in self.items()}

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls._from_api, handler.generate_schema(dict[str, Quantity])
        )

    @classmethod
    def _from_api(cls, amounts: dict[str, Quantity]) -> ResourceList:
        """Every resource list in an API object is an amount of something: never negative.

        The API server refuses negative requests, limits and LimitRange values; a negative
        maxAllowed used to cap recommendations below zero without a word.
        """
        for name, amount in amounts.items():
            if amount.nanos < 0:
                raise ValueError(f"{name}: {amount} is negative; amounts must be >= 0")
        return cls(amounts)


def require_ordered(
    lower: Mapping[str, Quantity] | None,
    upper: Mapping[str, Quantity] | None,
    names: tuple[str, str],
) -> None:
    """Raise ValueError where `lower` exceeds `upper` for a resource both name.

    One rule for minAllowed/maxAllowed and a LimitRange's min/default/max: the API
    refuses crossed bounds, and capping to them would let one bound win silently.
    """
    for resource, low in (lower or {}).items():
        high = (upper or {}).get(resource)
        if high is not None and low > high:
            raise ValueError(f"{names[0]} {resource} {low} is above {names[1]} {resource} {high}")


class OwnerReference(APIModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(APIModel):
    """metav1.ObjectMeta: the fields our components read; others are kept as extras."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Timestamp | None = None
    deletion_timestamp: Timestamp | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[dict[str, Any]] | None = None


class _Namespaced(Protocol):
    metadata: ObjectMeta


NamespacedT = TypeVar("NamespacedT", bound=_Namespaced)


def api_group(api_version: object) -> str | None:
    """The API group of an apiVersion ("apps/v1" -> "apps", "v1" -> core ""); None if unset."""
    if not isinstance(api_version, str) or not api_version:
        return None
    return api_version.rpartition("/")[0]


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of an object as the API's JSON; "" where the metadata lacks one."""
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def by_namespace(objects: Iterable[NamespacedT]) -> dict[str, list[NamespacedT]]:
    """Objects grouped by namespace, in list order: what one namespace's pods are held to."""
    grouped: dict[str, list[NamespacedT]] = {}
    for item in objects:
        grouped.setdefault(item.metadata.namespace or "", []).append(item)
    return grouped


class SelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class LabelSelectorRequirement(APIModel):
    """One matchExpressions term; values must fit the operator, as the API server demands.

    Unchecked, `In` without values silently matched nothing and `Exists` ignored its values.
    """

    key: str = Field(min_length=1)
    operator: SelectorOperator
    values: list[str] | None = None

    @model_validator(mode="after")
    def _values_fit_the_operator(self) -> Self:
        wants_values = self.operator in (SelectorOperator.IN, SelectorOperator.NOT_IN)
        if wants_values and not self.values:
            raise ValueError(f"values must be non-empty when operator is {self.operator}")
        if not wants_values and self.values:
            raise ValueError(f"values must be empty when operator is {self.operator}")
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        allowed = self.values or []
        if self.operator is SelectorOperator.IN:
            return present and labels[self.key] in allowed
        if self.operator is SelectorOperator.NOT_IN:
            return not present or labels[self.key] not in allowed
        if self.operator is SelectorOperator.EXISTS:
            return present
        return not present


class LabelSelector(APIModel):
    """metav1.LabelSelector; an empty selector matches every label set."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, wanted in (self.match_labels or {}).items():
            if labels.get(key) != wanted:
                return False
        return all(term.matches(labels) for term in self.match_expressions or [])
