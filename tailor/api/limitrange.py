"""The core/v1 LimitRange object and the merge of a namespace's LimitRanges into one item.

Capping needs one Container item and one Pod item per namespace; with several
LimitRange objects the tightest bound wins (lowest max, highest min, lowest
ratio), as the upstream VPA merges them. For the default limit upstream takes the
last item seen; we take the lowest, which does not depend on listing order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Self

from pydantic import Field, model_validator
from pydantic.alias_generators import to_camel

from tailor.api.meta import APIModel, ObjectMeta, ResourceList, require_ordered
from tailor.quantity import Quantity


class LimitType(StrEnum):
    CONTAINER = "Container"
    POD = "Pod"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"


class LimitRangeItem(APIModel):
    """One entry of spec.limits. `type` stays a plain string so new types never break parsing."""

    type: str
    max: ResourceList | None = None
    min: ResourceList | None = None
    default: ResourceList | None = None
    default_request: ResourceList | None = None
    max_limit_request_ratio: ResourceList | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        """The API server's rules; crossed bounds or a ratio below 1 make no pod admissible.

        A ratio under 1 used to push limits below requests (RequestsAndLimits) or requests
        above limits (RequestsOnly).
        """
        if self.type == LimitType.POD and (self.default or self.default_request):
            raise ValueError("default and defaultRequest may not be set when type is Pod")
        for lower, upper in _ORDERED_PAIRS:
            names = (to_camel(lower), to_camel(upper))
            require_ordered(getattr(self, lower), getattr(self, upper), names)
        for resource, ratio in (self.max_limit_request_ratio or {}).items():
            if ratio.value < 1:
                raise ValueError(f"maxLimitRequestRatio {resource} {ratio} is less than 1")
        return self

    def with_api_defaults(self) -> LimitRangeItem:
        """Fill the defaults the API server fills when it stores a Container item.

        default limit <- max; default request <- default limit, else min. Objects
        read from a live API server already carry them; hand-made ones may not.
        """
        if self.type != LimitType.CONTAINER:
            return self
        default = ResourceList(self.default or {})
        for name, amount in (self.max or {}).items():
            default.setdefault(name, amount)
        default_request = ResourceList(self.default_request or {})
        for name, amount in default.items():
            default_request.setdefault(name, amount)
        for name, amount in (self.min or {}).items():
            default_request.setdefault(name, amount)
        return self.model_copy(
            update={"default": default or None, "default_request": default_request or None}
        )


_ORDERED_PAIRS = (
    ("min", "max"),
    ("min", "default_request"),
    ("default_request", "max"),
    ("default_request", "default"),
    ("min", "default"),
    ("default", "max"),
)


class LimitRangeSpec(APIModel):
    limits: list[LimitRangeItem] = Field(default_factory=list)


class LimitRange(APIModel):
    api_version: str = "v1"
    kind: str = "LimitRange"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: LimitRangeSpec = Field(default_factory=LimitRangeSpec)


def _merge(
    lists: Iterable[ResourceList | None], pick: Callable[[Quantity, Quantity], Quantity]
) -> ResourceList | None:
    merged = ResourceList()
    for resources in lists:
        for name, amount in (resources or {}).items():
            merged[name] = pick(merged[name], amount) if name in merged else amount
    return merged or None


def merged_limit_range_item(
    limit_ranges: Iterable[LimitRange], limit_type: LimitType
) -> LimitRangeItem | None:
    """One item with the combined effect of every item of `limit_type`, or None if none bind."""
    items = [
        item
        for limit_range in limit_ranges
        for item in limit_range.spec.limits
        if item.type == limit_type
    ]
    if not items:  # most namespaces: nothing to merge (and every review asks)
        return None
    # Not validated: bounds taken from different objects may cross (no pod fits then).
    merged = LimitRangeItem.model_construct(
        type=limit_type,
        max=_merge((item.max for item in items), min),
        min=_merge((item.min for item in items), max),
        default=_merge((item.default for item in items), min),
        default_request=_merge((item.default_request for item in items), min),
        max_limit_request_ratio=_merge((item.max_limit_request_ratio for item in items), min),
    )
    bounds = (merged.max, merged.min, merged.default, merged.max_limit_request_ratio)
    if all(bound is None for bound in bounds):
        return None
    return merged
