"""The VPA-parity shortfall target."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.forecast.parity import bucket_edges, parity_target, vpa_rate, vpa_shortfall
from tests.recommender.forecast import synthetic as syn


def test_buckets_are_the_upstream_cpu_histogram() -> None:
    edges = bucket_edges()
    assert edges[0] == 0.0 and edges[1] == pytest.approx(0.01)
    assert edges[2] == pytest.approx(0.01 + 0.0105)
    assert edges.size == 177 and edges[-1] > 1000.0


def test_a_constant_container_never_falls_short_and_the_floor_covers_idle_ones() -> None:
    cpu = np.vstack([np.full(6 * syn.PER_DAY, 0.5), np.full(6 * syn.PER_DAY, 0.01)])
    shortfalls, judged = vpa_shortfall(cpu, syn.PER_DAY, syn.STEP)
    assert shortfalls.tolist() == [0.0, 0.0]
    assert judged.tolist() == [4 * syn.PER_DAY] * 2  # the first two days only build history


def test_a_container_that_starts_later_builds_its_own_history_first() -> None:
    # it starts on day 3 of the history and its load doubles on its second day: the
    # cold start is its own, not the fleet's, so its first two days are not judged
    early = np.full(8 * syn.PER_DAY, 0.5)
    late = np.full(8 * syn.PER_DAY, np.nan)
    late[3 * syn.PER_DAY :] = 0.5
    late[4 * syn.PER_DAY : 5 * syn.PER_DAY] = 1.0
    shortfalls, judged = vpa_shortfall(np.vstack([early, late]), syn.PER_DAY, syn.STEP)
    assert judged.tolist() == [6 * syn.PER_DAY, 3 * syn.PER_DAY]
    assert shortfalls.tolist() == [0.0, 0.0]


def test_noise_falls_short_about_as_often_as_the_vpa_rule_lets_it() -> None:
    rng = np.random.default_rng(0)
    cpu = rng.lognormal(0.0, 0.8, size=(1, 8 * syn.PER_DAY))
    shortfalls, judged = vpa_shortfall(cpu, syn.PER_DAY, syn.STEP)
    # the 90th percentile's bucket edge x 1.15 sits near the 95th percentile
    expected = np.mean(cpu > np.quantile(cpu, 0.9) * 1.15 * 1.025)
    assert shortfalls[0] / judged[0] == pytest.approx(expected, abs=0.015)


def test_the_target_scales_the_vpa_rate_and_stays_within_bounds() -> None:
    rng = np.random.default_rng(1)
    noisy = rng.lognormal(0.0, 0.8, size=(4, 6 * syn.PER_DAY))
    rate = vpa_rate(noisy, syn.STEP)
    assert 0.0 < rate < 0.2
    assert parity_target(rate, 0.5, 0.0, 1.0) == pytest.approx(rate / 2)
    assert parity_target(rate, 0.5, 0.2, 1.0) == 0.2
    assert np.isnan(vpa_rate(noisy[:, :24], syn.STEP))  # too short to judge
    assert parity_target(vpa_rate(noisy[:, :24], syn.STEP), 0.5, 0.003, 1.0) == 0.003
