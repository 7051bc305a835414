"""Upstream's eviction rate limit as a token bucket shared by the passes."""

from __future__ import annotations

import pytest

from updater.rate import EvictionRate


class Clock:
    def __init__(self) -> None:
        self.seconds = 100.0

    def __call__(self) -> float:
        return self.seconds


def test_no_limit_by_default_as_upstream() -> None:
    unlimited = EvictionRate(-1)
    assert not unlimited.limited
    assert all(unlimited.refusal() is None for _ in range(1000))


def test_a_burst_goes_at_once_and_then_one_per_period() -> None:
    clock = Clock()
    rate = EvictionRate(0.1, burst=2, clock=clock)
    assert rate.refusal() is None and rate.refusal() is None
    refused = rate.refusal()
    assert refused == (
        "eviction rate limit reached (0.1 per second, burst 2); left for a later pass"
    )
    clock.seconds += 9.9
    assert rate.refusal() is not None  # not yet a whole token
    clock.seconds += 0.2
    assert rate.refusal() is None
    clock.seconds += 3600  # an hour idle refills only up to the burst
    assert [rate.refusal() is None for _ in range(3)] == [True, True, False]


def test_a_limit_without_a_burst_is_refused() -> None:
    with pytest.raises(ValueError, match="burst of at least 1"):
        EvictionRate(1.0, burst=0)
