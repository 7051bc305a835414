"""Decay, reference-time jumps and percentiles of the decaying histograms."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.vpa.histogram import percentile_values, round_to_half_life
from recommender.vpa.model import VpaModel
from recommender.vpa.settings import ZERO_TIME, VpaSettings

DAY = 86400
MIDNIGHT = 19675 * DAY  # 2023-11-14T00:00:00Z


def one_series_model(settings: VpaSettings | None = None) -> VpaModel:
    return VpaModel(np.array([0]), settings=settings or VpaSettings())


def add_cpu(model: VpaModel, times: list[int], cores: list[float]) -> None:
    n = len(times)
    model.add_samples(np.zeros(n, int), np.array(times), np.array(cores), np.full(n, np.nan))


def cpu_percentiles(model: VpaModel, *ps: float) -> list[float]:
    return list(percentile_values(model.cpu, model.cpu_buckets.starts, list(ps))[:, 0])


def test_reference_time_rounds_like_go_time_round() -> None:
    times = np.array([MIDNIGHT, MIDNIGHT + DAY // 2 - 1, MIDNIGHT + DAY // 2, MIDNIGHT + DAY - 1])
    expected = [MIDNIGHT, MIDNIGHT, MIDNIGHT + DAY, MIDNIGHT + DAY]  # halves round up
    assert list(round_to_half_life(times, DAY)) == expected
    assert round_to_half_life(np.array([7]), 3)[0] == ZERO_TIME + (7 - ZERO_TIME + 1) // 3 * 3


def test_first_sample_sets_reference_and_weight() -> None:
    model = one_series_model()
    add_cpu(model, [MIDNIGHT + 6 * 3600], [0.5])
    assert model.cpu.reference[0] == MIDNIGHT
    bucket = model.cpu_buckets.find(np.array([0.5]))[0]
    assert model.cpu.weights[0, bucket] == pytest.approx(0.1 * 2 ** (6 / 24), rel=1e-12)
    assert model.cpu.total[0] == pytest.approx(0.1 * 2 ** (6 / 24), rel=1e-12)


def test_sample_two_half_lives_older_weighs_a_quarter() -> None:
    model = one_series_model()
    add_cpu(model, [MIDNIGHT + 3600, MIDNIGHT + 3600 + 2 * DAY], [0.5, 1.0])
    old, new = model.cpu_buckets.find(np.array([0.5, 1.0]))
    assert model.cpu.weights[0, old] / model.cpu.weights[0, new] == pytest.approx(0.25, rel=1e-12)


def test_reference_jumps_after_max_decay_exponent_half_lives() -> None:
    model = one_series_model()
    add_cpu(model, [MIDNIGHT], [0.5])
    add_cpu(model, [MIDNIGHT + 100 * DAY], [1.0])  # exactly at the horizon: no jump
    assert model.cpu.reference[0] == MIDNIGHT
    late = MIDNIGHT + 101 * DAY + 3 * 3600
    add_cpu(model, [late], [2.0])
    assert model.cpu.reference[0] == MIDNIGHT + 101 * DAY
    first = model.cpu_buckets.find(np.array([0.5]))[0]
    assert model.cpu.weights[0, first] == pytest.approx(0.1 * 2.0**-101, rel=1e-12)


def test_reference_jump_keeps_percentiles() -> None:
    # A short horizon (2 half-lives) forces several jumps inside comparable weights.
    settings = VpaSettings(max_decay_exponent=2, cpu_half_life=3600.0)
    times = [MIDNIGHT + 1800 * i for i in range(12)]
    cores = [0.1, 0.2, 0.4, 0.8, 1.6, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 0.05]
    stepwise = one_series_model(settings)
    for t, c in zip(times, cores, strict=True):
        add_cpu(stepwise, [t], [c])
    assert stepwise.cpu.reference[0] > MIDNIGHT  # it did jump
    # Expected percentiles from weights relative to the last sample, no reference at all.
    weights: dict[int, float] = {}
    buckets = stepwise.cpu_buckets
    for t, c in zip(times, cores, strict=True):
        b = int(buckets.find(np.array([c]))[0])
        weights[b] = weights.get(b, 0.0) + 2 ** ((t - times[-1]) / 3600)
    total = sum(weights.values())
    for p in (0.5, 0.9, 0.95):
        running = 0.0
        for b in sorted(weights):
            running += weights[b]
            if running >= p * total:
                break
        assert cpu_percentiles(stepwise, p)[0] == buckets.start(b + 1)
    # One bulk call (jumps computed in closed form) gives the same state.
    bulk = one_series_model(settings)
    add_cpu(bulk, times, cores)
    assert bulk.cpu.reference[0] == stepwise.cpu.reference[0]
    np.testing.assert_allclose(bulk.cpu.weights, stepwise.cpu.weights, rtol=1e-12)


def test_empty_histogram_percentile_is_zero() -> None:
    model = one_series_model()
    assert cpu_percentiles(model, 0.5, 0.9) == [0.0, 0.0]


def test_single_sample_gives_upper_edge_of_its_bucket() -> None:
    model = one_series_model()
    add_cpu(model, [MIDNIGHT], [0.5])
    b = int(model.cpu_buckets.find(np.array([0.5]))[0])
    assert cpu_percentiles(model, 0.0, 0.5, 1.0) == [model.cpu_buckets.start(b + 1)] * 3


def test_percentile_exactly_at_cumulative_boundary_stays_in_lower_bucket() -> None:
    model = VpaModel(np.array([0, 0]))
    # Two pods, one sample each at the same time: identical weights.
    model.add_samples(
        np.array([0, 1]), np.array([MIDNIGHT, MIDNIGHT]), np.array([0.1, 1.0]), np.full(2, np.nan)
    )
    low, high = model.cpu_buckets.find(np.array([0.1, 1.0]))
    starts = model.cpu_buckets.starts
    assert cpu_percentiles(model, 0.5) == [starts[low + 1]]  # partial sum == threshold
    assert cpu_percentiles(model, 0.5000001) == [starts[high + 1]]


def test_last_bucket_reports_its_start() -> None:
    model = one_series_model()
    add_cpu(model, [MIDNIGHT], [5000.0])
    assert cpu_percentiles(model, 0.9) == [model.cpu_buckets.start(175)]


def test_tiny_weights_do_not_make_a_histogram_non_empty() -> None:
    model = one_series_model()
    add_cpu(model, [MIDNIGHT], [0.5])
    add_cpu(model, [MIDNIGHT + 200 * DAY], [1.0])  # the first sample decays below epsilon
    b = int(model.cpu_buckets.find(np.array([1.0]))[0])
    assert cpu_percentiles(model, 0.0) == [model.cpu_buckets.start(b + 1)]


def upstream_percentile_bucket(weights: np.ndarray, total: float, p: float, eps: float) -> int:
    """Upstream's Percentile walk over one row: from the lowest bucket holding epsilon,
    adding bucket by bucket, never past the highest; -1 for an empty histogram."""
    heavy = [b for b, w in enumerate(weights) if w >= eps]
    if not heavy:
        return -1
    partial, bucket = 0.0, heavy[0]
    while bucket < heavy[-1]:
        partial += weights[bucket]
        if partial >= p * total:
            break
        bucket += 1
    return bucket


PERCENTILES = [0.0, 0.5, 0.9, 0.95, 1.0]


def assert_buckets_are_upstreams(model: VpaModel) -> np.ndarray:
    """Every row's CPU percentile buckets are the ones upstream's walk picks; returns them."""
    weights = model.cpu.weights
    buckets, nonempty = model.cpu.percentile_bucket(PERCENTILES)
    for row in range(weights.shape[0]):
        for i, p in enumerate(PERCENTILES):
            want = upstream_percentile_bucket(weights[row], model.cpu.total[row], p, 1e-4)
            assert nonempty[row] == (want >= 0)
            if want >= 0:
                assert buckets[i, row] == want, (row, p)
    return buckets


def test_percentile_buckets_walk_like_upstream_on_sparse_rows() -> None:
    rng = np.random.default_rng(7)
    model = VpaModel(np.arange(300))
    weights = model.cpu.weights
    for row in range(300):
        cells = rng.choice(weights.shape[1], size=rng.integers(0, 40), replace=False)
        weights[row, cells] = rng.exponential(1.0, cells.size) * rng.choice([1, 1e-5], cells.size)
    weights[7] = 0.0
    weights[7, [3, 10, 11]] = [5e-5, 1.0, 1.0]
    model.cpu.total[:] = weights.sum(axis=1)
    model.cpu.total[7] = 2.00004  # the median lies just past bucket 10's weight...
    buckets = assert_buckets_are_upstreams(model)
    assert buckets[1, 7] == 11  # ...unless the light bucket 3, below the range, were summed


def test_percentile_buckets_walk_like_upstream_when_no_cell_is_light() -> None:
    rng = np.random.default_rng(8)
    model = VpaModel(np.arange(300))
    weights = model.cpu.weights
    for row in range(300):
        cells = rng.choice(weights.shape[1], size=rng.integers(0, 40), replace=False)
        weights[row, cells] = rng.exponential(1.0, cells.size) + 1e-3
    model.cpu.total[:] = weights.sum(axis=1)
    assert_buckets_are_upstreams(model)
