"""Memory peaks per interval and OOM bumps, one series at a time."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.vpa.model import VpaModel
from recommender.vpa.settings import ZERO_TIME

DAY = 86400
HOUR = 3600
MIDNIGHT = 19675 * DAY
MIB = 2**20


def add_memory(model: VpaModel, series: list[int], times: list[int], used: list[float]) -> None:
    n = len(times)
    model.add_samples(np.array(series), np.array(times), np.full(n, np.nan), np.array(used))


def peak_weights(model: VpaModel, aggregate: int = 0) -> dict[int, float]:
    row = model.memory.weights[aggregate]
    return {int(b): float(row[b]) for b in np.flatnonzero(row > 0)}


def bucket(model: VpaModel, used: float) -> int:
    return int(model.memory_buckets.find(np.array([used]))[0])


def test_first_sample_opens_an_interval_a_day_long() -> None:
    model = VpaModel(np.array([0]))
    t0 = MIDNIGHT + 5 * HOUR
    add_memory(model, [0], [t0], [100e6])
    assert model.peaks.window_end[0] == t0 + DAY
    # The peak is stamped at the interval end: weight 2^((end - ref) / 24 h).
    ref = model.memory.reference[0]
    assert ref == MIDNIGHT + DAY  # round(t0 + 24 h) to the day
    assert peak_weights(model) == {
        bucket(model, 100e6): pytest.approx(2 ** ((t0 + DAY - ref) / DAY))
    }


def test_larger_sample_replaces_the_interval_peak() -> None:
    model = VpaModel(np.array([0]))
    t0 = MIDNIGHT
    add_memory(model, [0, 0, 0], [t0, t0 + HOUR, t0 + 2 * HOUR], [100e6, 300e6, 200e6])
    weights = peak_weights(model)
    assert list(weights) == [bucket(model, 300e6)]  # 100 MB removed, 200 MB never added
    assert model.memory.total[0] == pytest.approx(1.0)
    assert model.peaks.usage_peak[0] == 300e6


def test_replacement_also_works_across_calls() -> None:
    model = VpaModel(np.array([0]))
    add_memory(model, [0], [MIDNIGHT], [100e6])
    add_memory(model, [0], [MIDNIGHT + HOUR], [300e6])
    assert list(peak_weights(model)) == [bucket(model, 300e6)]
    assert model.memory.total[0] == pytest.approx(1.0)


def test_sample_past_interval_end_opens_a_new_interval() -> None:
    model = VpaModel(np.array([0]))
    t0 = MIDNIGHT
    add_memory(model, [0, 0, 0], [t0, t0 + DAY, t0 + 3 * DAY + HOUR], [300e6, 100e6, 200e6])
    # t0 + 24 h is not before the end: new interval ending t0 + 48 h; then one ending t0 + 96 h.
    assert model.peaks.window_end[0] == t0 + 4 * DAY
    weights = peak_weights(model)
    ref = model.memory.reference[0]
    expected = {
        bucket(model, 300e6): 2 ** ((t0 + DAY - ref) / DAY),
        bucket(model, 100e6): 2 ** ((t0 + 2 * DAY - ref) / DAY),
        bucket(model, 200e6): 2 ** ((t0 + 4 * DAY - ref) / DAY),
    }
    assert weights == pytest.approx(expected)
    assert model.peaks.usage_peak[0] == 200e6


def test_interval_opened_at_zero_is_never_raised() -> None:
    # Upstream only replaces a non-zero peak.
    model = VpaModel(np.array([0]))
    add_memory(model, [0, 0], [MIDNIGHT, MIDNIGHT + HOUR], [0.0, 300e6])
    assert list(peak_weights(model)) == [0]


def test_each_pod_contributes_its_own_peak() -> None:
    model = VpaModel(np.array([0, 0]))
    add_memory(model, [0, 1, 0, 1], [MIDNIGHT] * 2 + [MIDNIGHT + HOUR] * 2, [1e8, 5e8, 2e8, 4e8])
    weights = peak_weights(model)
    assert set(weights) == {bucket(model, 2e8), bucket(model, 5e8)}
    assert model.memory.total[0] == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("request_bytes", "expected_needed"),
    [
        (200 * MIB, 300 * MIB),  # +100 MiB beats x1.2 (240 MiB)
        (1024 * MIB, int(1024 * MIB * 1.2)),  # x1.2 (1228.8 MiB) beats +100 MiB
    ],
)
def test_oom_bump_uses_the_larger_of_min_bump_and_ratio(
    request_bytes: float, expected_needed: int
) -> None:
    model = VpaModel(np.array([0]))
    add_memory(model, [0], [MIDNIGHT], [50e6])
    model.add_oom(np.array([0]), np.array([MIDNIGHT + HOUR]), np.array([request_bytes]))
    assert model.peaks.oom_peak[0] == expected_needed
    assert list(peak_weights(model)) == [bucket(model, expected_needed)]  # replaced the 50 MB peak


def test_oom_uses_the_usage_peak_when_larger_than_the_request() -> None:
    model = VpaModel(np.array([0]))
    add_memory(model, [0], [MIDNIGHT], [2000 * MIB])
    model.add_oom(np.array([0]), np.array([MIDNIGHT + HOUR]), np.array([500 * MIB]))
    assert model.peaks.oom_peak[0] == int(2000 * MIB * 1.2)


def test_oom_on_a_fresh_series_opens_an_interval() -> None:
    model = VpaModel(np.array([0]))
    model.add_oom(np.array([0]), np.array([MIDNIGHT]), np.array([200 * MIB]))
    assert model.peaks.window_end[0] == MIDNIGHT + DAY
    assert model.peaks.oom_peak[0] == 300 * MIB
    assert model.peaks.last_time[0] == MIDNIGHT


def test_old_oom_is_processed_but_one_before_the_interval_is_dropped() -> None:
    model = VpaModel(np.array([0]))
    add_memory(model, [0, 0], [MIDNIGHT, MIDNIGHT + DAY + HOUR], [50e6, 60e6])
    assert model.peaks.window_end[0] == MIDNIGHT + 2 * DAY
    # Older than the last sample but inside the current interval: processed.
    model.add_oom(np.array([0]), np.array([MIDNIGHT + DAY]), np.array([200 * MIB]))
    assert model.peaks.oom_peak[0] == 300 * MIB
    assert model.peaks.last_time[0] == MIDNIGHT + DAY  # upstream moves it back
    # Before the current interval's start: discarded.
    before = model.memory.weights.copy()
    model.add_oom(np.array([0]), np.array([MIDNIGHT + DAY - 1]), np.array([400 * MIB]))
    np.testing.assert_array_equal(model.memory.weights, before)


def test_several_ooms_of_one_series_apply_in_order() -> None:
    model = VpaModel(np.array([0, 0]))
    model.add_oom(
        np.array([0, 1, 0]),
        np.array([MIDNIGHT, MIDNIGHT, MIDNIGHT + HOUR]),
        np.array([200 * MIB, 100 * MIB, 400 * MIB]),
    )
    assert model.peaks.oom_peak[0] == 500 * MIB
    assert model.peaks.oom_peak[1] == 200 * MIB
    assert model.memory.total[0] == pytest.approx(2.0)  # one peak per pod


def test_usage_after_oom_replaces_only_when_larger() -> None:
    model = VpaModel(np.array([0]))
    add_memory(model, [0], [MIDNIGHT], [50e6])
    model.add_oom(np.array([0]), np.array([MIDNIGHT + HOUR]), np.array([200 * MIB]))
    add_memory(model, [0], [MIDNIGHT + 2 * HOUR], [250 * MIB])  # below the 300 MiB OOM peak
    assert list(peak_weights(model)) == [bucket(model, 300 * MIB)]
    add_memory(model, [0], [MIDNIGHT + 3 * HOUR], [400 * MIB])
    assert list(peak_weights(model)) == [bucket(model, 400 * MIB)]
    assert model.peaks.window_end[0] != ZERO_TIME
