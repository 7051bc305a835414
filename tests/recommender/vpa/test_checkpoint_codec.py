"""VerticalPodAutoscalerCheckpoint export / import."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import numpy as np
import pytest

from recommender.vpa.checkpoint_codec import CheckpointError, format_time, time_seconds
from recommender.vpa.model import VpaModel
from recommender.vpa.settings import ZERO_TIME
from tailor.api.checkpoint import VerticalPodAutoscalerCheckpointStatus

DAY = 86400
HOUR = 3600
MIDNIGHT = 19675 * DAY  # 2023-11-14T00:00:00Z
FIELDS = ("cpu_target", "cpu_lower", "cpu_upper", "memory_target", "memory_lower", "memory_upper")


def busy_model() -> VpaModel:
    rng = np.random.default_rng(5)
    n_series, n = 4, 6000
    model = VpaModel(np.array([0, 0, 1, 2]), n_aggregates=4)
    series = np.repeat(np.arange(n_series - 1), n // 3)
    times = MIDNIGHT + np.tile(np.arange(n // 3) * 300, 3)
    cpu = rng.gamma(2.0, 0.25, n)
    memory = rng.uniform(2e8, 6e8, n)
    model.add_samples(series, times, cpu, memory)
    return model


def test_time_format_round_trip() -> None:
    assert format_time(MIDNIGHT) == "2023-11-14T00:00:00Z"
    read = VerticalPodAutoscalerCheckpointStatus.model_validate(
        {"firstSampleStart": "2023-11-14T00:00:00Z"}
    )
    assert time_seconds(read.first_sample_start) == MIDNIGHT
    assert format_time(ZERO_TIME) is None and time_seconds(None) == ZERO_TIME


def test_checkpoint_has_upstream_shape() -> None:
    model = busy_model()
    status = model.to_checkpoints(np.array([0]))[0]
    assert status["version"] == "v3"
    assert set(status) >= {
        "cpuHistogram",
        "memoryHistogram",
        "firstSampleStart",
        "lastSampleStart",
        "totalSamplesCount",
    }
    cpu = status["cpuHistogram"]
    assert max(cpu["bucketWeights"].values()) == 10000
    assert all(isinstance(k, str) and isinstance(v, int) for k, v in cpu["bucketWeights"].items())
    assert cpu["totalWeight"] == pytest.approx(model.cpu.total[0])
    assert cpu["referenceTimestamp"] == format_time(int(model.cpu.reference[0]))
    assert status["firstSampleStart"] == "2023-11-14T00:00:00Z"
    assert status["totalSamplesCount"] == 4000
    json.dumps(status)  # plain JSON types only
    written = model.to_checkpoints(np.array([0]), now=MIDNIGHT + 8 * DAY)[0]
    assert VerticalPodAutoscalerCheckpointStatus.model_validate(written).to_api() == written


def test_normalised_weights_round_to_nearest_and_drop_zeros() -> None:
    model = VpaModel(np.array([0]))
    low, mid, high = model.cpu_buckets.find(np.array([0.1, 0.5, 1.0]))
    model.cpu.weights[0, [low, mid, high]] = [2.0, 0.000302, 0.0000498]
    model.cpu.total[0] = 2.0003518
    weights = model.to_checkpoints(np.array([0]))[0]["cpuHistogram"]["bucketWeights"]
    assert weights == {str(low): 10000, str(mid): 2}  # 1.51 -> 2; 0.249 -> 0 dropped


def test_empty_aggregate_writes_empty_histograms() -> None:
    status = VpaModel(np.array([0])).to_checkpoints(np.array([0]))[0]
    assert status["cpuHistogram"]["bucketWeights"] == {}
    assert status["cpuHistogram"]["referenceTimestamp"] is None
    assert status["firstSampleStart"] is None


def test_round_trip_gives_the_same_recommendation() -> None:
    model = busy_model()
    statuses = model.to_checkpoints(np.arange(4))
    restored = VpaModel(np.array([0, 0, 1, 2]), n_aggregates=4)
    for aggregate, status in enumerate(json.loads(json.dumps(statuses))):
        restored.load_checkpoint(aggregate, status)
    got, want = restored.recommend(), model.recommend()
    for field in (*FIELDS, "confidence"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    np.testing.assert_array_equal(restored.cpu.reference, model.cpu.reference)
    np.testing.assert_allclose(restored.cpu.total, model.cpu.total)


def test_restored_model_keeps_learning_on_the_same_reference() -> None:
    model = busy_model()
    restored = VpaModel(np.array([0, 0, 1, 2]), n_aggregates=4)
    restored.load_checkpoint(1, model.to_checkpoints(np.array([1]))[0])
    later = MIDNIGHT + 8 * DAY  # after everything series 2 has seen
    for m in (model, restored):
        m.add_samples(np.array([2]), np.array([later]), np.array([3.0]), np.array([np.nan]))
    assert restored.cpu.reference[1] == model.cpu.reference[1]
    assert restored.cpu.total[1] == pytest.approx(model.cpu.total[1])


def test_checkpoint_at_now_leaves_out_peaks_of_intervals_in_progress() -> None:
    model = VpaModel(np.array([0]))
    model.add_samples(
        np.zeros(3, int),
        np.array([MIDNIGHT, MIDNIGHT + DAY + HOUR, MIDNIGHT + DAY + 2 * HOUR]),
        np.full(3, 0.5),
        np.array([1e8, 4e8, 5e8]),
    )
    full = model.to_checkpoints(np.array([0]))[0]["memoryHistogram"]
    now = MIDNIGHT + DAY + 3 * HOUR  # the second interval (ending +48 h) is in progress
    written = model.to_checkpoints(np.array([0]), now=now)[0]
    closed = str(int(model.memory_buckets.find(np.array([1e8]))[0]))
    running = str(int(model.memory_buckets.find(np.array([5e8]))[0]))
    assert set(full["bucketWeights"]) == {closed, running}
    assert set(written["memoryHistogram"]["bucketWeights"]) == {closed}
    assert written["lastUpdateTime"] == format_time(now)
    assert model.memory.total[0] == pytest.approx(full["totalWeight"])  # live state untouched


def test_a_young_workload_whose_peaks_are_all_in_progress_writes_a_valid_checkpoint() -> None:
    """Taking every peak back out must leave 0, not -2e-16: pydantic (and upstream's loader)
    refuse a negative total, and the service's whole pass failed on it."""
    rng = np.random.default_rng(1)
    for _ in range(200):  # two to six pods of one workload, staggered, within 24 h
        pods = int(rng.integers(2, 7))
        model = VpaModel(np.zeros(pods, int))
        for pod in range(pods):
            times = MIDNIGHT + int(rng.integers(0, 5 * HOUR)) + np.arange(0, HOUR, 60)
            memory = rng.uniform(1e8, 3e9, times.size)
            model.add_samples(np.full(times.size, pod), times, np.full(times.size, 0.1), memory)
        status = model.to_checkpoints(np.array([0]), now=MIDNIGHT + 6 * HOUR)[0]
        assert 0.0 <= status["memoryHistogram"]["totalWeight"] < 1e-9  # nothing left
        VerticalPodAutoscalerCheckpointStatus.model_validate(status)


def test_load_rejects_other_versions_and_bad_buckets() -> None:
    model = VpaModel(np.array([0]))
    with pytest.raises(ValueError, match="version"):
        model.load_checkpoint(0, {"version": "v2"})
    with pytest.raises(ValueError, match="bucket"):
        model.load_checkpoint(
            0, {"version": "v3", "cpuHistogram": {"bucketWeights": {"176": 1}, "totalWeight": 1}}
        )


def _with(status: dict[str, Any], path: tuple[str, ...], value: object) -> dict[str, Any]:
    changed = copy.deepcopy(status)
    holder = changed
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("cpuHistogram",), "abc", "cpuHistogram: Input should be a valid dictionary"),
        (("cpuHistogram", "bucketWeights"), [1, 2], "bucketWeights: Input should be a valid dict"),
        (("cpuHistogram", "bucketWeights"), {"x": 1}, "'x' is not a bucket index"),
        (
            ("cpuHistogram", "bucketWeights"),
            {"10": "5"},
            "bucketWeights.10: Value error, must be a number",
        ),
        (
            ("cpuHistogram", "bucketWeights"),
            {"10": -5, "20": 10},
            "bucketWeights.10: Input should be greater than or equal to 0",
        ),
        (
            ("cpuHistogram", "bucketWeights"),
            {"10": float("nan")},
            "bucketWeights.10: Value error, must be a whole number",
        ),
        (("cpuHistogram", "bucketWeights"), {"10": 2.5}, "must be a whole number"),
        (
            ("memoryHistogram", "bucketWeights"),
            {"10": 2**32},
            "memoryHistogram.bucketWeights.10: Input should be less than or equal to 4294967295",
        ),
        (
            ("cpuHistogram", "totalWeight"),
            "0.5",
            "cpuHistogram.totalWeight: Input should be a valid number",
        ),
        (
            ("cpuHistogram", "totalWeight"),
            float("nan"),
            "totalWeight: Input should be a finite number",
        ),
        (
            ("cpuHistogram", "totalWeight"),
            float("inf"),
            "totalWeight: Input should be a finite number",
        ),
        (("cpuHistogram", "referenceTimestamp"), 12345, "12345 is not an RFC 3339 time"),
        (
            ("lastSampleStart",),
            "garbage",
            "lastSampleStart: Value error, 'garbage' is not an RFC 3339",
        ),
        (("lastSampleStart",), "2023-11-14", "not an RFC 3339 time"),
        (("lastSampleStart",), "2000-01-01T00:00:00Z", "before firstSampleStart"),
        (("firstSampleStart",), 5, "firstSampleStart: Value error, 5 is not an RFC 3339 time"),
        (("totalSamplesCount",), "12", "totalSamplesCount: Value error, must be a number"),
        (
            ("totalSamplesCount",),
            -5,
            "totalSamplesCount: Input should be greater than or equal to 0",
        ),
        (("totalSamplesCount",), 2.7, "must be a whole number"),
    ],
)
def test_a_malformed_checkpoint_is_refused_and_changes_nothing(
    path: tuple[str, ...], value: object, message: str
) -> None:
    """Go could not decode these (uint32 weights, float64 total, RFC 3339 times); they used
    to load as skewed histograms, negative counts, or half-applied state."""
    status = _with(busy_model().to_checkpoints(np.array([0]))[0], path, value)
    model = busy_model()
    before = model.to_checkpoints(np.arange(4))
    with pytest.raises(CheckpointError, match=re.escape(message)):
        model.load_checkpoint(1, status)
    assert model.to_checkpoints(np.arange(4)) == before


@pytest.mark.parametrize("status", [None, [1], "v3"])
def test_a_status_that_is_not_an_object_is_refused(status: object) -> None:
    with pytest.raises(CheckpointError, match="checkpoint status: Input should be a valid dict"):
        busy_model().load_checkpoint(0, status)  # type: ignore[arg-type]


@pytest.mark.parametrize("aggregate", [4, -1])
def test_loading_into_an_aggregate_that_does_not_exist_is_refused(aggregate: int) -> None:
    """-1 used to overwrite the last aggregate."""
    status = busy_model().to_checkpoints(np.array([0]))[0]
    with pytest.raises(CheckpointError, match="outside"):
        busy_model().load_checkpoint(aggregate, status)


def test_missing_histograms_and_totals_load_as_empty_as_upstream() -> None:
    """Go's zero values: no histogram or no totalWeight is an empty histogram, not an error."""
    status = busy_model().to_checkpoints(np.array([0]))[0]
    del status["memoryHistogram"]
    del status["cpuHistogram"]["totalWeight"]
    model = VpaModel(np.array([0]))
    model.load_checkpoint(0, status)
    assert model.cpu.total[0] == 0 and model.memory.total[0] == 0


@pytest.mark.parametrize("value", ["garbage", 5, "2023-11-14", "2023-11-14 00:00:00Z"])
def test_a_malformed_last_update_time_is_refused(value: object) -> None:
    """The reader used to skip lastUpdateTime, which upstream's decoder (and our API model)
    refuses: one rule for the whole status now."""
    status = _with(busy_model().to_checkpoints(np.array([0]))[0], ("lastUpdateTime",), value)
    with pytest.raises(CheckpointError, match="checkpoint lastUpdateTime: Value error"):
        busy_model().load_checkpoint(1, status)


def test_bucket_keys_are_read_as_go_reads_map_int_keys() -> None:
    """Go decodes a map[int] key with strconv.ParseInt, which takes a leading '+'."""
    status = busy_model().to_checkpoints(np.array([0]))[0]
    weights = status["cpuHistogram"]["bucketWeights"]
    signed = _with(
        status, ("cpuHistogram", "bucketWeights"), {f"+{k}": v for k, v in weights.items()}
    )
    plain, plus = VpaModel(np.array([0])), VpaModel(np.array([0]))
    plain.load_checkpoint(0, status)
    plus.load_checkpoint(0, signed)
    np.testing.assert_array_equal(plus.cpu.weights, plain.cpu.weights)
