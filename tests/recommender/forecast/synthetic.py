"""Small synthetic fleets with known shapes, for the forecast tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data.arrays import UsageArrays

STEP = 300
PER_DAY = 288
START = 1_700_006_400  # a UTC midnight, so blocks and days line up
GIB = 2.0**30


def keys(n: int) -> pd.DataFrame:
    names = [f"pod-{i}" for i in range(n)]
    return pd.DataFrame({"namespace": "ns", "workload": names, "pod": names, "container": "main"})


def daily(
    days: float, level: float = 1.0, amplitude: float = 0.6, noise: float = 0.05, seed: int = 0
) -> np.ndarray:
    """A serving container: a clean daily cycle (peak mid-afternoon UTC) plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(days * PER_DAY))
    phase = 2 * np.pi * (t % PER_DAY) / PER_DAY
    return np.maximum(
        level + amplitude * np.sin(phase - np.pi / 2) + rng.normal(0, noise, t.size), 0
    )


def noise(days: float, level: float = 0.5, spread: float = 0.1, seed: int = 1) -> np.ndarray:
    """A stationary container: no cycle at all."""
    rng = np.random.default_rng(seed)
    return np.maximum(rng.normal(level, spread, int(days * PER_DAY)), 0)


def on_off(days: float, busy: float = 4.0, seed: int = 2) -> np.ndarray:
    """A batch container: idle, then saturated for a few hours, at random times."""
    rng = np.random.default_rng(seed)
    n = int(days * PER_DAY)
    out = np.full(n, 0.01)
    t = 0
    while t < n:
        t += int(rng.integers(6 * 12, 20 * 12))
        length = int(rng.integers(2 * 12, 5 * 12))
        out[t : t + length] = busy
        t += length
    return out + rng.uniform(0, 0.01, n)


def fleet(series: list[np.ndarray], memory: list[np.ndarray] | None = None) -> UsageArrays:
    cpu = np.vstack(series)
    mem = np.vstack(memory) if memory is not None else np.full(cpu.shape, 1.0 * GIB)
    return UsageArrays(keys(len(series)), START, STEP, cpu, mem)
