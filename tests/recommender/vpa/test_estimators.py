"""Confidence, margin, confidence multipliers, pod minimum and rounding, worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recommender.vpa.model import VpaModel
from recommender.vpa.settings import VpaSettings

DAY = 86400
MIDNIGHT = 19675 * DAY


def millicores(cores: float) -> int:
    return round(cores * 1000)


def model_with_minutes(minutes: int, step: int = 60, cores: float = 0.5) -> VpaModel:
    model = VpaModel(np.array([0]))
    times = MIDNIGHT + step * np.arange(minutes)
    model.add_samples(np.zeros(minutes, int), times, np.full(minutes, cores), np.full(minutes, 3e8))
    return model


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        (720, 719 / 1440),  # 12 h of minute samples: the span (719 min) is the limit
        (1440, 1439 / 1440),  # 24 h
        (7 * 1440, (7 * 1440 - 1) / 1440),  # 7 days
    ],
)
def test_confidence_is_history_span_in_days(samples: int, expected: float) -> None:
    assert model_with_minutes(samples).confidence()[0] == pytest.approx(expected, rel=1e-12)


def test_confidence_is_limited_by_sample_count() -> None:
    # One sample every 5 minutes for 7 days: span ~7 d, but only 2016 samples = 1.4 "days".
    model = model_with_minutes(7 * 288, step=300)
    assert model.confidence()[0] == pytest.approx(2016 / 1440, rel=1e-12)


def test_no_history_means_zero_confidence_and_minimum_bounds() -> None:
    rec = VpaModel(np.array([0])).recommend()
    assert rec.confidence[0] == 0.0
    assert rec.cpu_target[0] == rec.cpu_lower[0] == rec.cpu_upper[0] == 0.025
    assert rec.memory_lower[0] == rec.memory_upper[0] == 250 * 2**20


def test_margin_and_confidence_multipliers_in_whole_millicores() -> None:
    model = model_with_minutes(720)
    rec = model.recommend()
    c = 719 / 1440
    edge = model.cpu_buckets.start(int(model.cpu_buckets.find(np.array([0.5]))[0]) + 1)
    base = math.trunc(edge * 1000.0)  # percentile as whole millicores (truncated)
    with_margin = base + math.trunc(base * 0.15)
    assert millicores(rec.cpu_target[0]) == with_margin
    assert millicores(rec.cpu_upper[0]) == math.trunc(with_margin * (1 + 1 / c))  # about x3
    assert millicores(rec.cpu_lower[0]) == math.trunc(with_margin * (1 + 0.001 / c) ** -2)
    assert rec.cpu_upper[0] / rec.cpu_target[0] == pytest.approx(1 + 1 / c, rel=1e-3)


def test_memory_bounds_follow_the_same_estimators() -> None:
    model = model_with_minutes(1440)
    rec = model.recommend()
    c = 1439 / 1440
    peak_bucket = int(model.memory_buckets.find(np.array([3e8]))[0])
    edge = model.memory_buckets.start(peak_bucket + 1)
    target = math.trunc(edge) + math.trunc(math.trunc(edge) * 0.15)
    assert rec.memory_target[0] == target
    assert rec.memory_upper[0] == math.trunc(target * (1 + 1 / c))
    assert rec.memory_lower[0] == math.trunc(target * (1 + 0.001 / c) ** -2)


def test_single_sample_has_infinite_upper_bound_capped_like_upstream() -> None:
    model = model_with_minutes(1)
    rec = model.recommend()
    assert rec.confidence[0] == 0.0
    assert rec.cpu_upper[0] == 1e14 / 1000.0  # MaxResourceAmount millicores
    assert rec.cpu_lower[0] == 0.025  # (1 + 0.001/0)^-2 = 0, then the pod minimum


def test_two_container_pod_minimum_is_truncated_per_container() -> None:
    # Upstream: ScaleResource(25 m, 1/2) truncates to 12 m; 250 MiB / 2 = 125 MiB exactly.
    rec = VpaModel(np.array([0, 1])).recommend(containers_per_pod=np.array([2, 3]))
    assert rec.cpu_target[0] == 0.012
    assert rec.memory_target[0] == 125 * 2**20
    assert rec.cpu_target[1] == 0.008  # 25 / 3 = 8.33 -> 8 m
    assert rec.memory_target[1] == math.trunc(250 * 2**20 / 3)


def test_cpu_is_whole_millicores_and_rounding_unit_rounds_up() -> None:
    plain = model_with_minutes(1440, cores=0.7)
    fine = plain.recommend().cpu_target[0] * 1000
    assert fine == pytest.approx(round(fine), abs=1e-9)  # whole millicores
    assert round(fine) % 50 != 0
    coarse = VpaModel(np.array([0]), settings=VpaSettings(cpu_round_millicores=50))
    coarse.add_samples(
        np.zeros(1440, int),
        MIDNIGHT + 60 * np.arange(1440),
        np.full(1440, 0.7),
        np.full(1440, np.nan),
    )
    assert millicores(coarse.recommend().cpu_target[0]) == math.ceil(round(fine) / 50) * 50


def test_containers_per_pod_must_be_positive() -> None:
    with pytest.raises(ValueError, match="containers_per_pod"):
        VpaModel(np.array([0])).recommend(containers_per_pod=np.array([0]))


def test_bounds_use_p50_p90_p95_of_the_cpu_distribution() -> None:
    # 100 pods of one workload, two samples each a day apart: equal weight per pod,
    # each pod in its own bucket (20 .. 119), so every percentile picks a distinct edge.
    model = VpaModel(np.zeros(100, int))
    starts = model.cpu_buckets.starts
    values = np.ceil((starts[20:120] + starts[21:121]) / 2 * 1000) / 1000
    for t in (MIDNIGHT, MIDNIGHT + DAY):
        model.add_samples(np.arange(100), np.full(100, t), values, np.full(100, np.nan))
    buckets = np.sort(model.cpu_buckets.find(values))
    edges = model.cpu_buckets.starts

    def with_margin(p: float) -> int:
        # first bucket whose cumulative count reaches p * 100, its upper edge, + 15 %
        base = math.trunc(float(edges[buckets[math.ceil(p * 100) - 1] + 1]) * 1000)
        return base + math.trunc(base * 0.15)

    c = min(1.0, 200 / 1440)
    rec = model.recommend()
    assert rec.confidence[0] == pytest.approx(c)
    assert millicores(rec.cpu_target[0]) == with_margin(0.9)
    assert millicores(rec.cpu_lower[0]) == math.trunc(with_margin(0.5) * (1 + 0.001 / c) ** -2)
    assert millicores(rec.cpu_upper[0]) == math.trunc(with_margin(0.95) * (1 + 1 / c))
    assert len(set(model.cpu_buckets.find(values))) == 100
    assert with_margin(0.5) < with_margin(0.9) < with_margin(0.95) < with_margin(0.97)
