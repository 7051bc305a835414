"""Ingest semantics of VpaModel, and agreement with a sample-by-sample reference model."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.vpa.model import VpaModel
from recommender.vpa.settings import VpaSettings
from tests.recommender.vpa.reference import ReferenceModel

DAY = 86400
HOUR = 3600
MIDNIGHT = 19675 * DAY


def test_out_of_order_cpu_samples_are_dropped_within_and_across_calls() -> None:
    model = VpaModel(np.array([0]))
    times = np.array([MIDNIGHT + 120, MIDNIGHT + 60, MIDNIGHT + 120, MIDNIGHT + 180])
    model.add_samples(np.zeros(4, int), times, np.full(4, 0.5), np.full(4, np.nan))
    assert model.sample_count[0] == 2  # 60 is older, the second 120 is a duplicate
    model.add_samples(
        np.array([0]), np.array([MIDNIGHT + 150]), np.array([0.5]), np.array([np.nan])
    )
    assert model.sample_count[0] == 2
    assert model.last_cpu_time[0] == MIDNIGHT + 180


def test_memory_accepts_equal_times_but_not_older_ones() -> None:
    model = VpaModel(np.array([0]))
    times = np.array([MIDNIGHT + 60, MIDNIGHT + 60, MIDNIGHT + 30])
    model.add_samples(np.zeros(3, int), times, np.full(3, np.nan), np.array([1e8, 3e8, 9e8]))
    b300 = int(model.memory_buckets.find(np.array([3e8]))[0])
    assert list(np.flatnonzero(model.memory.weights[0])) == [b300]  # 9e8 came too late


def test_cpu_and_memory_keep_separate_last_times() -> None:
    model = VpaModel(np.array([0]))
    model.add_samples(
        np.array([0, 0]),
        np.array([MIDNIGHT + 60, MIDNIGHT + 30]),
        np.array([0.5, np.nan]),
        np.array([np.nan, 1e8]),
    )
    assert model.sample_count[0] == 1
    assert model.memory.total[0] > 0  # memory had seen nothing newer than 30


def test_series_order_across_rows_does_not_matter() -> None:
    rng = np.random.default_rng(3)
    n = 400
    series = rng.integers(0, 4, n)
    times = MIDNIGHT + rng.integers(0, 5 * DAY, n)
    order = np.lexsort((times, series))
    cpu, memory = rng.uniform(0.01, 2, n), rng.uniform(1e7, 1e9, n)
    grouped = VpaModel(np.array([0, 0, 1, 1]))
    grouped.add_samples(series[order], times[order], cpu[order], memory[order])
    # Same order within each series, series interleaved at random.
    keys = rng.random(n)
    for k in range(4):
        mine = np.flatnonzero(series[order] == k)
        keys[mine] = np.sort(keys[mine])
    regrouped = order[np.argsort(keys)]
    assert np.any(np.diff(series[regrouped]) != 0)
    interleaved = VpaModel(np.array([0, 0, 1, 1]))
    interleaved.add_samples(series[regrouped], times[regrouped], cpu[regrouped], memory[regrouped])
    np.testing.assert_allclose(interleaved.cpu.weights, grouped.cpu.weights, rtol=1e-12)
    np.testing.assert_allclose(interleaved.memory.weights, grouped.memory.weights, rtol=1e-12)


def test_pods_of_one_workload_merge_into_one_aggregate() -> None:
    model = VpaModel(np.array([0, 0, 1]))
    model.add_samples(
        np.array([0, 1, 1, 2]),
        np.array([MIDNIGHT, MIDNIGHT + 60, MIDNIGHT + 120, MIDNIGHT]),
        np.array([0.1, 1.0, 1.0, 0.5]),
        np.full(4, np.nan),
    )
    assert list(model.sample_count) == [3, 1]
    assert model.first_sample[0] == MIDNIGHT and model.last_sample[0] == MIDNIGHT + 120
    low, high = model.cpu_buckets.find(np.array([0.1, 1.0]))
    assert model.cpu.weights[0, low] > 0 and model.cpu.weights[0, high] > 0
    rec = model.recommend()
    assert rec.cpu_target[0] > rec.cpu_target[1] > 0.025


def test_add_window_equals_add_samples() -> None:
    rng = np.random.default_rng(11)
    n_series, n_windows, step = 5, 3 * 288, 300
    cpu = rng.gamma(2.0, 0.2, (n_series, n_windows))
    memory = rng.uniform(1e8, 2e9, (n_series, n_windows))
    cpu[rng.random(cpu.shape) < 0.1] = np.nan
    memory[rng.random(memory.shape) < 0.1] = np.nan
    mapping = np.array([0, 0, 1, 2, 2])
    windows = VpaModel(mapping)
    for j in range(n_windows):
        windows.add_window(MIDNIGHT + 7 * HOUR + j * step, cpu[:, j], memory[:, j])
    bulk = VpaModel(mapping)
    rows, cols = np.nonzero(~(np.isnan(cpu) & np.isnan(memory)))
    times = MIDNIGHT + 7 * HOUR + cols * step
    bulk.add_samples(rows, times, cpu[rows, cols], memory[rows, cols])
    for name in ("cpu", "memory"):
        got, want = getattr(bulk, name), getattr(windows, name)
        np.testing.assert_array_equal(got.reference, want.reference)
        np.testing.assert_allclose(got.weights, want.weights, rtol=1e-12, atol=1e-15)
    got_rec, want_rec = bulk.recommend(), windows.recommend()
    for field in ("cpu_target", "cpu_upper", "memory_target", "memory_upper", "confidence"):
        np.testing.assert_array_equal(getattr(got_rec, field), getattr(want_rec, field))


def random_batch(rng: np.random.Generator, n_series: int, start: int, n: int):
    series = rng.integers(0, n_series, n)
    times = start + 300 * rng.integers(0, 600, n)  # ~2 days, collisions on purpose
    cpu = rng.gamma(1.5, 0.3, n)
    memory = rng.choice([0.0, 5e7, 2e8, 8e8, 3e9], n) * rng.uniform(0.9, 1.1, n)
    cpu[rng.random(n) < 0.1] = np.nan
    memory[rng.random(n) < 0.1] = np.nan
    memory[rng.random(n) < 0.02] = 0.0
    return series, times, cpu, memory


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_sample_by_sample_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    mapping = [0, 0, 1, 1, 1, 2]
    settings = VpaSettings()
    model = VpaModel(np.array(mapping), settings=settings)
    reference = ReferenceModel(mapping, settings)
    start = MIDNIGHT + 5 * HOUR
    for batch in range(5):
        series, times, cpu, memory = random_batch(rng, len(mapping), start + batch * DAY, 300)
        model.add_samples(series, times, cpu, memory)
        for s, t, c, m in zip(series, times, cpu, memory, strict=True):
            reference.add_cpu(int(s), int(t), float(c))
            reference.add_memory(int(s), int(t), float(m))
        oom_series = rng.integers(0, len(mapping), 3)
        oom_times = start + batch * DAY + rng.integers(0, 2 * DAY, 3)
        oom_request = rng.choice([np.nan, 1e8, 6e8], 3)
        model.add_oom(oom_series, oom_times, oom_request)
        for s, t, r in zip(oom_series, oom_times, oom_request, strict=True):
            reference.add_oom(int(s), int(t), float(r))
    for a, agg in enumerate(reference.aggregates):
        for name, ref_hist in (("cpu", agg.cpu), ("memory", agg.memory)):
            hist = getattr(model, name)
            scale = 2.0 ** ((ref_hist.reference - hist.reference[a]) / hist.half_life)
            np.testing.assert_allclose(
                hist.weights[a], np.array(ref_hist.weights) * scale, rtol=1e-9, atol=1e-12
            )
        assert model.sample_count[a] == agg.count
        assert model.first_sample[a] == agg.first and model.last_sample[a] == agg.last
        expected = reference.recommend(a)
        rec = model.recommend()
        for field, value in expected.items():
            assert getattr(rec, field)[a] == pytest.approx(value, rel=1e-12), field
    for s, container in enumerate(reference.containers):
        assert model.peaks.window_end[s] == container.window_end
        assert model.peaks.usage_peak[s] == container.memory_peak
        assert model.peaks.oom_peak[s] == container.oom_peak


def test_expire_forgets_idle_aggregates_after_the_memory_window() -> None:
    model = VpaModel(np.array([0, 1]))
    model.add_samples(
        np.array([0, 1]), np.array([MIDNIGHT, MIDNIGHT + 2 * DAY]), np.full(2, 0.5), np.full(2, 1e8)
    )
    assert list(model.expire(MIDNIGHT + 8 * DAY - 1)) == []
    assert list(model.expire(MIDNIGHT + 8 * DAY)) == [0]
    assert model.sample_count[0] == 0 and model.cpu.total[0] == 0
    assert model.sample_count[1] == 1


def test_input_validation() -> None:
    model = VpaModel(np.array([0, 1]))
    with pytest.raises(ValueError, match="out of range"):
        model.add_samples(np.array([2]), np.array([MIDNIGHT]), np.array([1.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="one length"):
        model.add_samples(np.array([0]), np.array([MIDNIGHT, 1]), np.array([1.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="n_aggregates"):
        VpaModel(np.array([0, 3]), n_aggregates=2)
    assert VpaModel(np.array([0, 0]), n_aggregates=5).recommend().cpu_target.shape == (5,)


def test_chunked_batches_give_the_same_state(monkeypatch: pytest.MonkeyPatch) -> None:
    import recommender.vpa.model as model_module

    rng = np.random.default_rng(21)
    mapping = np.array([0, 0, 1, 1, 2, 0])
    rows = []
    for batch in range(3):
        series, times, cpu, memory = random_batch(rng, 5, MIDNIGHT + batch * DAY, 400)
        rows.append((series, times, cpu, memory))
    # Series 5 (aggregate 0) starts a day before the others but comes last: a later
    # chunk holds the aggregate's earliest time.
    early_times = MIDNIGHT - DAY + 600 * np.arange(50)
    early = (np.full(50, 5), early_times, np.full(50, 0.3), np.full(50, 1e8))
    order = [np.concatenate(parts) for parts in zip(*rows, early, strict=True)]
    whole = VpaModel(mapping)
    whole.add_samples(*order)
    monkeypatch.setattr(model_module, "CHUNK_ROWS", 37)
    chunked = VpaModel(mapping)
    chunked.add_samples(*order)
    for name in ("cpu", "memory"):
        got, want = getattr(chunked, name), getattr(whole, name)
        np.testing.assert_array_equal(got.reference, want.reference)
        np.testing.assert_allclose(got.weights, want.weights, rtol=1e-9, atol=1e-12)
    assert whole.cpu.reference[0] == MIDNIGHT - DAY  # chronological, not chunk order
    np.testing.assert_array_equal(chunked.last_cpu_time, whole.last_cpu_time)
    np.testing.assert_array_equal(chunked.sample_count, whole.sample_count)
    for name in ("window_end", "usage_peak", "oom_peak", "last_time"):
        np.testing.assert_array_equal(getattr(chunked.peaks, name), getattr(whole.peaks, name))
