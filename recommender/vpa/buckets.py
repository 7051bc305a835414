"""Exponential histogram buckets, matching upstream's floating-point formulas.

Bucket n >= 1 starts at ``first * (ratio**n - 1) / (ratio - 1)`` and bucket 0 at
0. Upstream finds a value's bucket through logarithms,
``int(log(v * (ratio - 1) / first + 1) / log(ratio))``, so a value sitting on a
boundary (10 m is exactly the start of CPU bucket 1) lands wherever that float
expression puts it. numpy's vectorised log is not correctly rounded, so instead
of calling it we evaluate the scalar formula once per bucket to find the exact
smallest value of each bucket, and then classify values by comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from recommender.vpa.settings import VpaSettings

#: Largest millicore lookup table worth building (the CPU one has ~1e6 entries).
_MAX_TABLE_SIZE = 4_000_000


def go_integer_power(base: float, exponent: int) -> float:
    """base ** exponent (exponent >= 0) as Go's math.Pow computes it for a whole exponent:
    the mantissa squared repeatedly with the binary exponent kept apart. It is not
    correctly rounded, and upstream's bucket starts come from it: numpy's power differs
    in the last bits for most buckets, which moved memory bucket 4 by a byte."""
    mantissa, binary_exponent = math.frexp(base)  # base = mantissa * 2**e, 0.5 <= mantissa < 1
    result, result_exponent = 1.0, 0
    remaining = exponent
    while remaining:
        if remaining & 1:
            result *= mantissa
            result_exponent += binary_exponent
        mantissa *= mantissa
        binary_exponent <<= 1
        if mantissa < 0.5:
            mantissa += mantissa
            binary_exponent -= 1
        remaining >>= 1
    return math.ldexp(result, result_exponent)


@dataclass(frozen=True)
class ExponentialBuckets:
    """Bucketing scheme: smallest bucket `first`, growth `ratio`, last start >= `max_value`."""

    max_value: float
    first: float
    ratio: float
    starts: np.ndarray = field(init=False, repr=False, compare=False)
    lowest_values: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_value <= 0 or self.first <= 0 or self.ratio <= 1:
            raise ValueError("max_value and first must be > 0 and ratio > 1")
        count = (
            math.ceil(
                math.log(self.max_value * (self.ratio - 1) / self.first + 1) / math.log(self.ratio)
            )
            + 1
        )
        starts = np.array(
            [0.0]
            + [
                self.first * (go_integer_power(self.ratio, n) - 1) / (self.ratio - 1)
                for n in range(1, count)
            ]
        )
        starts.setflags(write=False)
        object.__setattr__(self, "starts", starts)
        lowest = np.array(
            [-np.inf] + [self._lowest_value_of(n, float(starts[n])) for n in range(1, count)]
        )
        lowest.setflags(write=False)
        object.__setattr__(self, "lowest_values", lowest)

    def scalar_bucket(self, value: float) -> int:
        """Upstream FindBucket for one value, evaluated with correctly rounded scalar logs."""
        if value < self.first:
            return 0
        bucket = int(math.log(value * (self.ratio - 1) / self.first + 1) / math.log(self.ratio))
        return min(bucket, self.count - 1)

    def _lowest_value_of(self, bucket: int, guess: float) -> float:
        """Smallest float that `scalar_bucket` puts in `bucket` or above (it is monotone)."""
        value = guess
        if self.scalar_bucket(value) >= bucket:
            while self.scalar_bucket(below := math.nextafter(value, -math.inf)) >= bucket:
                value = below
            return value
        while self.scalar_bucket(value) < bucket:
            value = math.nextafter(value, math.inf)
        return value

    @property
    def count(self) -> int:
        return int(self.starts.shape[0])

    def start(self, bucket: int) -> float:
        """Start of one bucket (upper edge of bucket - 1)."""
        return float(self.starts[bucket])

    def find(self, values: np.ndarray) -> np.ndarray:
        """Bucket index (int64) of each value: below `first` -> 0, beyond the end -> last."""
        values = np.asarray(values, dtype=np.float64)
        return np.searchsorted(self.lowest_values, values, side="right") - 1

    @cached_property
    def _millicore_table(self) -> np.ndarray | None:
        """Bucket of every whole millicore up to the last bucket's start (None if too big)."""
        size = math.ceil(self.lowest_values[-1] * 1000.0) + 1
        if size > _MAX_TABLE_SIZE:
            return None
        table = np.searchsorted(self.lowest_values, np.arange(size) / 1000.0, side="right") - 1
        return table.astype(np.uint8 if self.count <= 256 else np.int64)

    def find_millicores(self, millicores: np.ndarray) -> np.ndarray:
        """`find(millicores / 1000)` for whole millicores, by table lookup (much faster)."""
        table = self._millicore_table
        if table is None:
            return self.find(np.asarray(millicores, dtype=np.float64) / 1000.0)
        index = np.minimum(millicores, table.shape[0] - 1).astype(np.int64)
        return table[index].astype(np.int64)


def cpu_buckets(settings: VpaSettings) -> ExponentialBuckets:
    """CPU histogram buckets in cores (176 buckets with the defaults)."""
    return ExponentialBuckets(
        settings.cpu_max_value, settings.cpu_first_bucket, 1.0 + settings.bucket_growth
    )


def memory_buckets(settings: VpaSettings) -> ExponentialBuckets:
    """Memory histogram buckets in bytes (176 buckets with the defaults)."""
    return ExponentialBuckets(
        settings.memory_max_value, settings.memory_first_bucket, 1.0 + settings.bucket_growth
    )
