"""Hand-built histories and test strategies for the backtest tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from recommender.backtest import StrategySpec
from recommender.data import files
from recommender.data.arrays import UsageArrays
from recommender.replay import Fleet, Requests, Strategy

STEP = 300
PER_DAY = 86_400 // STEP
MIB = 2.0**20
GIB = 2.0**30
START = pd.Timestamp("2024-01-01T00:00:00Z")


def history(
    cpu: np.ndarray,
    memory: np.ndarray | None = None,
    pods: list[str] | None = None,
    **resources: float,
) -> pd.DataFrame:
    """A canonical long frame: one row per (series, window); `cpu` is (windows,) or (n, windows).

    NaN cpu marks a gap (that window has no row at all).
    """
    cpu = np.atleast_2d(np.asarray(cpu, dtype=np.float64))
    memory = (
        np.full(cpu.shape, GIB)
        if memory is None
        else np.broadcast_to(np.atleast_2d(memory), cpu.shape).astype(np.float64)
    )
    names = pods or [f"pod-{i}" for i in range(cpu.shape[0])]
    frames = []
    for i, pod in enumerate(names):
        keep = ~np.isnan(cpu[i])
        windows = np.flatnonzero(keep)
        frame = pd.DataFrame(
            {
                "timestamp": START + pd.to_timedelta(windows * STEP, unit="s"),
                "namespace": "test",
                "workload": pod,
                "pod": pod,
                "container": "main",
                "cpu": cpu[i][keep],
                "memory": memory[i][keep],
            }
        )
        for name, value in resources.items():
            frame[name] = value
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def write_usage(tmp_path: Path, frame: pd.DataFrame) -> Path:
    """`frame` as the CSV file `--input` reads (written by the project's own writer)."""
    path = tmp_path / "usage.csv"
    files.write_usage(frame, path)
    return path


def days(count: float) -> np.ndarray:
    """Window numbers of `count` days."""
    return np.arange(round(count * PER_DAY))


class FixedStrategy:
    """Requests a fixed CPU and memory from its first decision on, never resizes again."""

    def __init__(self, cpu: float, memory: float, name: str = "fixed") -> None:
        self.name = name
        self.cpu, self.memory = cpu, memory
        self.size = 0
        self.seen: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.ooms: list[tuple[int, np.ndarray, np.ndarray]] = []

    def reset(self, fleet: Fleet) -> None:
        self.size = fleet.size

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        self.seen.append((step, cpu.copy(), memory.copy()))

    def observe_oom(self, step: int, containers: np.ndarray, memory: np.ndarray) -> None:
        self.ooms.append((step, containers.copy(), memory.copy()))

    def decide(self, step: int, current: Requests) -> Requests:
        return Requests(
            np.full(self.size, self.cpu), np.full(self.size, self.memory), current.memory_limit
        )


def make_fixed(future: UsageArrays) -> Strategy:
    """1 core, 2 GiB for everyone (module level: picklable for worker processes)."""
    return FixedStrategy(1.0, 2 * GIB)


def fixed_spec(cpu: float, memory: float, name: str = "fixed") -> StrategySpec:
    """A spec for in-process runs only (the factory is a closure)."""
    return StrategySpec(name, lambda future: FixedStrategy(cpu, memory, name))


def make_not_a_strategy(usage: object) -> object:
    return object()


def make_failing_factory(usage: object) -> object:
    raise RuntimeError("no model file")


def make_exiting_factory(usage: object) -> object:
    raise SystemExit(0)


class CrashingStrategy(FixedStrategy):
    """Breaks at its first decision (module level, as every imported factory's strategy:
    picklable for worker processes)."""

    def decide(self, step: int, current: Requests) -> Requests:
        raise ValueError("requests of the wrong shape")


class ExitingStrategy(FixedStrategy):
    def decide(self, step: int, current: Requests) -> Requests:
        raise SystemExit(0)


def make_crashing(usage: object) -> Strategy:
    return CrashingStrategy(1.0, GIB)


def make_exiting(usage: object) -> Strategy:
    return ExitingStrategy(1.0, GIB)


def make_negative(usage: object) -> Strategy:
    return FixedStrategy(-1.0, GIB)
