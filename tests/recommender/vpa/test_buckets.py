"""Bucket boundaries and FindBucket, against the upstream formulas worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recommender.vpa.buckets import ExponentialBuckets, cpu_buckets, memory_buckets
from recommender.vpa.settings import VpaSettings


def test_cpu_and_memory_have_176_buckets() -> None:
    # ceil(log(1000 * 0.05 / 0.01 + 1) / log(1.05)) + 1 = ceil(174.57) + 1
    assert cpu_buckets(VpaSettings()).count == 176
    assert memory_buckets(VpaSettings()).count == 176


def test_cpu_bucket_edges() -> None:
    buckets = cpu_buckets(VpaSettings())
    assert buckets.start(0) == 0.0
    assert buckets.start(1) == pytest.approx(0.01, rel=1e-12)
    assert buckets.start(2) == pytest.approx(0.01 + 0.01 * 1.05, rel=1e-12)
    expected_last = 0.01 * (math.pow(1.05, 175) - 1) / 0.05
    assert buckets.start(175) == pytest.approx(expected_last, rel=1e-12)
    assert 1000.0 < buckets.start(175) < 1025.0  # last start is the first at or past max


def test_memory_bucket_edges() -> None:
    buckets = memory_buckets(VpaSettings())
    assert buckets.start(1) == pytest.approx(1e7, rel=1e-12)
    assert buckets.start(175) == pytest.approx(1e7 * (math.pow(1.05, 175) - 1) / 0.05, rel=1e-12)


def test_upstream_unit_test_scheme() -> None:
    # upstream histogram_options_test.go: max 500, first 40, ratio 1.5
    buckets = ExponentialBuckets(500.0, 40.0, 1.5)
    assert buckets.count == 6
    assert list(buckets.starts) == pytest.approx([0.0, 40.0, 100.0, 190.0, 325.0, 527.5])
    assert list(buckets.find(np.array([-1.0, 39.99, 40.0, 100.0, 900.0]))) == [0, 0, 1, 2, 5]


def test_find_bucket_at_edges() -> None:
    buckets = cpu_buckets(VpaSettings())
    values = np.array([-1.0, 0.0, 0.0099, 0.01, 0.0204, 0.021, 999.0, 1000.0, 1030.0, 1e9])
    # 0.01 is exactly bucket 1's start; 1000 cores is still in bucket 174.
    assert list(buckets.find(values)) == [0, 0, 0, 1, 1, 2, 174, 174, 175, 175]


def test_find_bucket_matches_the_log_formula_everywhere() -> None:
    buckets = cpu_buckets(VpaSettings())
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [rng.uniform(0, 1100, 5000), buckets.starts, np.nextafter(buckets.starts, 0)]
    )
    expected = [buckets.scalar_bucket(float(v)) for v in values]
    assert list(buckets.find(values)) == expected


def test_millicore_table_agrees_with_find() -> None:
    buckets = cpu_buckets(VpaSettings())
    millicores = np.arange(0, 1_100_000, 7)
    assert np.array_equal(buckets.find_millicores(millicores), buckets.find(millicores / 1000.0))
    assert buckets.find_millicores(np.array([10.0]))[0] == 1  # 10 m starts bucket 1


@pytest.mark.parametrize(
    ("kind", "bucket", "go_start"),
    [  # printed by a Go program calling upstream's GetBucketStart formula (math.Pow)
        ("memory", 4, 43101249.999999963),  # numpy's power gives 43101250.00000001
        ("memory", 50, 2093479957.1507351),
        ("memory", 175, 1021109408904.86),
        ("cpu", 2, 0.020499999999999987),
        ("cpu", 99, 24.847858637391148),
        ("cpu", 175, 1021.1094089048601),
    ],
)
def test_bucket_starts_are_gos_to_the_last_bit(kind: str, bucket: int, go_start: float) -> None:
    """Go's Pow squares repeatedly and is not correctly rounded; upstream's starts come from
    it, and a start one ulp above Go's moved a memory target by a byte."""
    buckets = memory_buckets(VpaSettings()) if kind == "memory" else cpu_buckets(VpaSettings())
    assert buckets.starts[bucket] == go_start
