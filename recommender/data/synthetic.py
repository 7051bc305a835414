"""A small, seeded demo fleet covering the usage shapes a recommender must handle.

`tailor recommend --demo` and `tailor backtest --demo` run on it, so it is
deterministic (same seed, same frames) and small (9 containers, 8 days at
5 minutes by default). Each workload exercises one shape: a diurnal web
service with a sidecar, a weekly business-hours cycle, a nightly batch, a slow
memory leak that is OOM-killed at its limit, bursts, and a JVM's fixed heap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.schema import validate_events, validate_usage
from tailor.durations import DAY, HOUR

DEMO_NAMESPACE = "demo"
DEMO_START = pd.Timestamp("2024-01-01T00:00:00Z")  # a Monday, so weekdays line up
MIB = 2.0**20
GIB = 2.0**30
NOT_SET = float("nan")


@dataclass(frozen=True)
class Resources:
    """Requests and limits as a manifest would set them (NaN: not set)."""

    cpu_request: float
    memory_request: float
    cpu_limit: float
    memory_limit: float


@dataclass(frozen=True)
class Clock:
    """Window start times of the demo, in the units the shapes are written in."""

    seconds: np.ndarray  # since DEMO_START
    step: int

    @property
    def hours(self) -> np.ndarray:
        return self.seconds / HOUR

    @property
    def hour_of_day(self) -> np.ndarray:
        return self.hours % 24.0

    @property
    def weekday(self) -> np.ndarray:
        """0 = Monday ... 6 = Sunday."""
        return (self.seconds // DAY) % 7


def _daily_wave(clock: Clock, trough_hour: float = 3.0) -> np.ndarray:
    """0 at `trough_hour` UTC, 1 twelve hours later."""
    return 0.5 - 0.5 * np.cos(2 * np.pi * (clock.hour_of_day - trough_hour) / 24.0)


def _noise(rng: np.random.Generator, size: int, spread: float) -> np.ndarray:
    """Multiplicative noise around 1 (lognormal, so never negative)."""
    return rng.lognormal(mean=0.0, sigma=spread, size=size)


def _web(clock: Clock, rng: np.random.Generator, share: float) -> dict[str, np.ndarray]:
    traffic = (0.15 + 0.85 * _daily_wave(clock)) * share
    n = clock.seconds.size
    return {
        "app_cpu": (0.04 + 0.9 * traffic) * _noise(rng, n, 0.12),
        "app_memory": (380 + 140 * traffic) * MIB * _noise(rng, n, 0.02),
        "sidecar_cpu": (0.01 + 0.07 * traffic) * _noise(rng, n, 0.15),
        "sidecar_memory": (46 + 10 * traffic) * MIB * _noise(rng, n, 0.02),
    }


def _weekly(clock: Clock, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Reports service: busy in office hours on weekdays, nearly idle at weekends."""
    weekday_level = np.where(clock.weekday < 5, 1.0, 0.2)
    office = np.clip(np.sin(np.pi * (clock.hour_of_day - 8.0) / 10.0), 0.0, None)
    load = weekday_level * (0.1 + 0.9 * office)
    n = clock.seconds.size
    cpu = (0.03 + 1.1 * load) * _noise(rng, n, 0.15)
    memory = (520 + 480 * load) * MIB * _noise(rng, n, 0.03)
    return cpu, memory


def _nightly_batch(clock: Clock, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A worker that crunches a nightly batch from 01:00 to 03:00 UTC and idles otherwise."""
    running = (clock.hour_of_day >= 1.0) & (clock.hour_of_day < 3.0)
    progress = np.clip((clock.hour_of_day - 1.0) / 2.0, 0.0, 1.0)
    n = clock.seconds.size
    cpu = np.where(running, 1.7 * _noise(rng, n, 0.08), 0.02 * _noise(rng, n, 0.2))
    memory = np.where(running, (900 + 1600 * progress) * MIB, 150 * MIB) * _noise(rng, n, 0.02)
    return cpu, memory


def _leak(
    clock: Clock, rng: np.random.Generator, limit: float
) -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]]]:
    """Memory grows ~13 MiB/h from 250 MiB until it hits `limit`: OOMKilled, restart, repeat.

    Returns cpu, memory and the kills as (seconds since start, bytes in use).
    """
    baseline = 250 * MIB
    n = clock.seconds.size
    peak = np.empty(n)
    killed = np.zeros(n, dtype=bool)
    kills: list[tuple[float, float]] = []
    restart_at = 0.0
    rate = 13 * MIB / HOUR * rng.uniform(0.9, 1.1)
    for index, second in enumerate(clock.seconds):
        window_end = float(second + clock.step)
        peak[index] = baseline + rate * (window_end - restart_at)  # growing: peak at the end
        if peak[index] >= limit:
            kills.append((float(np.floor(restart_at + (limit - baseline) / rate)), limit))
            killed[index] = True
            restart_at = window_end
            rate = 13 * MIB / HOUR * rng.uniform(0.9, 1.1)
    memory = np.where(killed, limit, np.minimum(peak * _noise(rng, n, 0.01), limit))
    cpu = (0.12 + 0.06 * _daily_wave(clock)) * _noise(rng, n, 0.1)
    return cpu, memory, kills


def _bursty(clock: Clock, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A notifier idling at 0.05 cores with ~6 random bursts a day of 1-6 windows."""
    n = clock.seconds.size
    burst = np.zeros(n)
    expected = 6.0 * n * clock.step / DAY
    for start in rng.choice(n, size=rng.poisson(expected), replace=False):
        length = int(rng.integers(1, 7))
        burst[start : start + length] = np.maximum(
            burst[start : start + length], rng.uniform(0.8, 2.4)
        )
    cpu = (0.05 + burst) * _noise(rng, n, 0.1)
    memory = (190 + 60 * burst) * MIB * _noise(rng, n, 0.02)
    return cpu, memory


def _jvm(clock: Clock, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A JVM with -Xms = -Xmx = 2 GiB: memory warms up to a flat plateau, CPU has GC spikes."""
    n = clock.seconds.size
    warmed = np.clip(clock.hours / 1.0, 0.0, 1.0)
    memory = (600 * MIB + (2 * GIB + 300 * MIB - 600 * MIB) * warmed) * _noise(rng, n, 0.003)
    gc = rng.random(n) < clock.step / 1200.0  # a full GC about every 20 minutes
    cpu = (0.25 + 0.3 * _daily_wave(clock) + 0.6 * gc) * _noise(rng, n, 0.1)
    return cpu, memory


def _container(
    clock: Clock,
    workload: str,
    pod: str,
    container: str,
    cpu: np.ndarray,
    memory: np.ndarray,
    resources: Resources,
) -> pd.DataFrame:
    n = clock.seconds.size
    if not np.isnan(resources.cpu_limit):
        cpu = np.minimum(cpu, resources.cpu_limit)  # CFS throttling caps usage at the limit
    return pd.DataFrame(
        {
            "timestamp": DEMO_START + pd.to_timedelta(clock.seconds, unit="s"),
            "namespace": DEMO_NAMESPACE,
            "workload": workload,
            "pod": pod,
            "container": container,
            "cpu": cpu,
            "memory": memory,
            "cpu_request": np.full(n, resources.cpu_request),
            "memory_request": np.full(n, resources.memory_request),
            "cpu_limit": np.full(n, resources.cpu_limit),
            "memory_limit": np.full(n, resources.memory_limit),
        }
    )


def demo_fleet(days: int = 8, step: int = 300, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(usage, events) of the demo namespace, validated; same arguments, same frames."""
    if days <= 0 or step <= 0:
        raise ValueError("days and step must be positive")
    rng = np.random.default_rng(seed)
    clock = Clock(np.arange(0, days * DAY, step, dtype=np.int64), step)
    parts: list[pd.DataFrame] = []

    app = Resources(1.0, 768 * MIB, NOT_SET, 768 * MIB)
    sidecar = Resources(0.1, 64 * MIB, 0.5, 128 * MIB)
    for pod, share in (("web-7c9d4b-2xk8q", 1.05), ("web-7c9d4b-9mz4t", 0.95)):
        web = _web(clock, rng, share)
        parts.append(_container(clock, "web", pod, "app", web["app_cpu"], web["app_memory"], app))
        parts.append(
            _container(
                clock, "web", pod, "envoy", web["sidecar_cpu"], web["sidecar_memory"], sidecar
            )
        )

    cpu, memory = _weekly(clock, rng)
    reports = Resources(0.5, 1.5 * GIB, NOT_SET, 1.5 * GIB)
    parts.append(_container(clock, "reports", "reports-5f6b8d-q7w2e", "app", cpu, memory, reports))

    cpu, memory = _nightly_batch(clock, rng)
    batch = Resources(2.0, 3 * GIB, 2.0, 3.5 * GIB)
    parts.append(
        _container(clock, "nightly-batch", "nightly-batch-0", "worker", cpu, memory, batch)
    )

    leak = Resources(0.25, 512 * MIB, NOT_SET, 1 * GIB)
    cpu, memory, kills = _leak(clock, rng, leak.memory_limit)
    leak_pod = "ledger-6d8f7c-h3j5k"
    parts.append(_container(clock, "ledger", leak_pod, "app", cpu, memory, leak))

    cpu, memory = _bursty(clock, rng)
    bursty = Resources(0.2, 256 * MIB, 3.0, 512 * MIB)
    parts.append(_container(clock, "notifier", "notifier-84c6f9-t5r8n", "app", cpu, memory, bursty))

    cpu, memory = _jvm(clock, rng)
    jvm = Resources(1.0, 3 * GIB, NOT_SET, 3 * GIB)
    parts.append(_container(clock, "inventory", "inventory-0", "jvm", cpu, memory, jvm))

    usage = validate_usage(pd.concat(parts, ignore_index=True), "demo fleet")
    events = pd.DataFrame(
        {
            "timestamp": [DEMO_START + pd.Timedelta(seconds=second) for second, _ in kills],
            "namespace": DEMO_NAMESPACE,
            "workload": "ledger",
            "pod": leak_pod,
            "container": "app",
            "reason": "OOMKilled",
            "memory": [in_use for _, in_use in kills],
        }
    )
    return usage, validate_events(events, "demo fleet events")
