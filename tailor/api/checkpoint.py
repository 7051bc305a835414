"""The VerticalPodAutoscalerCheckpoint object: one per (VPA, container), histogram state.

Bucket weights travel as a JSON object keyed by the bucket index as a string
(`{"0": 10000, "17": 42}`); in Python they are `dict[int, int]`. Timestamps the
upstream recommender leaves unset are written as `null` by Go; we read `null` as
"unset" and omit the field on output, which the API server treats the same way.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_serializer, field_validator

from tailor.api.crd import API_VERSION, CHECKPOINT_KIND, CHECKPOINT_LIST_KIND
from tailor.api.meta import APIModel, ObjectMeta, Timestamp

UINT32_MAX = 2**32 - 1

BucketWeight = Annotated[int, Field(ge=0, le=UINT32_MAX)]


class HistogramCheckpoint(APIModel):
    reference_timestamp: Timestamp | None = None
    bucket_weights: dict[int, BucketWeight] | None = None
    # Upstream refuses a negative total; NaN or infinity would poison every loaded weight.
    total_weight: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @field_validator("bucket_weights")
    @classmethod
    def _indices_are_non_negative(cls, weights: dict[int, int] | None) -> dict[int, int] | None:
        if weights is not None and any(index < 0 for index in weights):
            raise ValueError("bucket indices must be non-negative")
        return weights

    @field_serializer("bucket_weights", when_used="always")
    def _string_keys(self, weights: dict[int, int] | None) -> dict[str, int] | None:
        if weights is None:
            return None
        return {str(index): weight for index, weight in weights.items()}


class VerticalPodAutoscalerCheckpointSpec(APIModel):
    vpa_object_name: str | None = None
    container_name: str | None = None


class VerticalPodAutoscalerCheckpointStatus(APIModel):
    last_update_time: Timestamp | None = None
    version: str | None = None
    cpu_histogram: HistogramCheckpoint | None = None
    memory_histogram: HistogramCheckpoint | None = None
    first_sample_start: Timestamp | None = None
    last_sample_start: Timestamp | None = None
    total_samples_count: int | None = Field(default=None, ge=0)


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
