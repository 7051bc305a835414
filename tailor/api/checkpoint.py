"""The VerticalPodAutoscalerCheckpoint object: one per (VPA, container), histogram state.

These models are THE rule for what a checkpoint may hold, shared by every reader
(the recommender's `load_status` reads a status through them). They accept exactly
what Go's encoding/json decodes into upstream's types (`BucketWeights map[int]uint32`,
`TotalWeight float64`, `TotalSamplesCount int`, times `metav1.Time`): a string is not
a number, a boolean is not a number, a date alone is not a time. Pydantic's lax mode
took all three, so the same object could pass here and fail in the recommender.

Beyond Go's types: bucket indices, weights, totals and counts may not be negative and
a total must be finite (upstream refuses a negative total on load; NaN would poison
every weight). A whole number written as a float (`2.0`) is taken as an integer: the
API server re-encodes it as `2` before any Go client decodes it.

Bucket weights travel as a JSON object keyed by the bucket index as a string
(`{"0": 10000, "17": 42}`); in Python they are `dict[int, int]`. Times Go leaves
unset are written as `null`; we read `null` (and Go's zero time) as None and omit
the field on output, which the API server treats the same way.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, ConfigDict, Field, field_serializer

from tailor.api.crd import API_VERSION, CHECKPOINT_KIND, CHECKPOINT_LIST_KIND
from tailor.api.meta import APIModel, MetaTime, ObjectMeta

UINT32_MAX = 2**32 - 1
INT64_MAX = 2**63 - 1

#: strconv.ParseInt(key, 10, 64), which Go's decoder applies to map[int] keys.
_DECIMAL = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _bucket_index(key: object) -> int:
    """A bucket key: decimal integer text, as Go decodes a map[int] key; never negative."""
    if not isinstance(key, str) or not _DECIMAL.fullmatch(key):
        raise ValueError(f"{key!r} is not a bucket index (a decimal integer string)")
    index = int(key)
    if not 0 <= index <= INT64_MAX:
        raise ValueError(f"bucket index {index} is outside [0, {INT64_MAX}]")
    return index


def _whole_number(value: object) -> int:
    """A JSON number with no fraction, as Go decodes into an integer field."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"must be a whole number, got {value!r}")
    return int(value)


BucketIndex = Annotated[int, BeforeValidator(_bucket_index)]
BucketWeight = Annotated[int, BeforeValidator(_whole_number), Field(ge=0, le=UINT32_MAX)]
SampleCount = Annotated[int, BeforeValidator(_whole_number), Field(ge=0, le=INT64_MAX)]
#: float64; Go takes any JSON number, but not a string or a boolean.
TotalWeight = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]

_GO_TYPES = ConfigDict(strict=True)
"""Strict where Go is: no str -> number, bool -> number or number -> str coercion."""


class HistogramCheckpoint(APIModel):
    model_config = _GO_TYPES

    reference_timestamp: MetaTime = None
    bucket_weights: dict[BucketIndex, BucketWeight] | None = None
    total_weight: TotalWeight | None = None

    @field_serializer("bucket_weights", when_used="always")
    def _string_keys(self, weights: dict[int, int] | None) -> dict[str, int] | None:
        if weights is None:
            return None
        return {str(index): weight for index, weight in weights.items()}


class VerticalPodAutoscalerCheckpointSpec(APIModel):
    model_config = _GO_TYPES

    vpa_object_name: str | None = None
    container_name: str | None = None


class VerticalPodAutoscalerCheckpointStatus(APIModel):
    model_config = _GO_TYPES

    last_update_time: MetaTime = None
    version: str | None = None
    cpu_histogram: HistogramCheckpoint | None = None
    memory_histogram: HistogramCheckpoint | None = None
    first_sample_start: MetaTime = None
    last_sample_start: MetaTime = None
    total_samples_count: SampleCount | None = None


class VerticalPodAutoscalerCheckpoint(APIModel):
    api_version: str = API_VERSION
    kind: str = CHECKPOINT_KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: VerticalPodAutoscalerCheckpointSpec | None = None
    status: VerticalPodAutoscalerCheckpointStatus | None = None


class VerticalPodAutoscalerCheckpointList(APIModel):
    api_version: str = API_VERSION
    kind: str = CHECKPOINT_LIST_KIND
    metadata: dict[str, object] | None = None
    items: list[VerticalPodAutoscalerCheckpoint] = Field(default_factory=list)


def checkpoint_name(vpa_name: str, container_name: str) -> str:
    """The object name the upstream recommender gives a checkpoint: `<vpa>-<container>`."""
    return f"{vpa_name}-{container_name}"
