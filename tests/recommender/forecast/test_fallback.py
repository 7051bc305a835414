"""The request of a series too young for margins of its own: a priced quantile of what it used."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.forecast.planner import FALLBACK_PRICE_FACTOR, _fallback_cpu
from recommender.forecast.settings import ForecastSettings

SETTINGS = ForecastSettings()
HEADROOM = 1.0 + SETTINGS.react_margin


def _young_pair() -> np.ndarray:
    """Eight hours: a flat series, and a light one with short bursts (4 % of windows)."""
    rng = np.random.default_rng(0)
    flat = 1.0 + rng.normal(0.0, 0.01, 96)
    bursty = 0.2 + rng.normal(0.0, 0.01, 96)
    bursty[[10, 40, 41, 80]] = 4.0
    return np.vstack([flat, bursty])


def test_a_cheap_shortfall_stops_below_rare_bursts_and_a_dear_one_covers_them() -> None:
    cpu = _young_pair()
    # one shortfall window priced at 0.5 core-windows (before the factor)
    moderate = _fallback_cpu(cpu, np.full(2, 0.5 / FALLBACK_PRICE_FACTOR), SETTINGS)
    # the flat series covers (nearly) all it has seen: its top is cheap
    assert moderate[0] >= np.quantile(cpu[0], 0.97) * HEADROOM
    # the bursty one stops at its base level: 4 cores to cover 4 % of windows cost more
    assert moderate[1] < 0.5
    dear = _fallback_cpu(cpu, np.full(2, np.inf), SETTINGS)
    assert dear == pytest.approx(cpu.max(axis=1) * HEADROOM)


def test_the_price_only_ever_raises_the_fallback() -> None:
    cpu = _young_pair()
    prices = [0.0, 0.01, 0.1, 1.0, 10.0, 100.0, np.inf]
    levels = np.array([_fallback_cpu(cpu, np.full(2, p), SETTINGS) for p in prices])
    assert np.all(np.diff(levels, axis=0) >= 0.0)
    assert np.isnan(_fallback_cpu(np.full((1, 5), np.nan), np.ones(1), SETTINGS)).all()
