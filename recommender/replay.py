"""The one protocol every recommendation strategy speaks in a replay.

A strategy is stepped through time over a block of containers at once (numpy
arrays of shape (containers,)): it observes each window's usage, learns of OOM
kills exactly as the live recommender would, and at each step decides which
requests are in force from the next window on. Its own update policy (when a
new recommendation is worth a change) lives inside `decide`, so the backtest
counts exactly the changes that strategy would make on a cluster.

Strategies never see a window before `observe` hands it over; only the oracle,
which is the hindsight limit by definition, is constructed with the future.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd


@dataclass
class Requests:
    """Requests (and the memory limit) in force per container, float64 (n,).

    cpu in cores, memory and memory_limit in bytes. NaN means "none set yet".
    """

    cpu: np.ndarray
    memory: np.ndarray
    memory_limit: np.ndarray

    @classmethod
    def unset(cls, n: int) -> Requests:
        return cls(np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan))

    def copy(self) -> Requests:
        return Requests(self.cpu.copy(), self.memory.copy(), self.memory_limit.copy())


@dataclass(frozen=True)
class Fleet:
    """What a strategy knows up front about the block it will replay.

    `memory_limit_ratio` is the per-container memory limit / request ratio the
    admission step keeps when it applies a request (like the upstream admission
    controller with RequestsAndLimits); None means 1.0 everywhere (limit equals
    request). The replay enforces it identically for every strategy.
    """

    keys: pd.DataFrame  # one row per container (namespace, workload, pod, container)
    start: int  # UNIX seconds of window 0
    step: int  # seconds per window
    memory_limit_ratio: np.ndarray | None = field(default=None, compare=False)

    @property
    def size(self) -> int:
        return len(self.keys)

    def time_of(self, step: int) -> int:
        """UNIX seconds at the start of window `step`."""
        return self.start + step * self.step

    def limit_ratio(self) -> np.ndarray:
        """The memory limit / request ratio per container, float64 (n,)."""
        if self.memory_limit_ratio is None:
            return np.ones(self.size)
        return np.asarray(self.memory_limit_ratio, dtype=np.float64)


class Strategy(Protocol):
    """A recommender plus its update policy, steppable over many containers."""

    name: str

    def reset(self, fleet: Fleet) -> None:
        """Forget everything; prepare state for `fleet.size` containers."""

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        """Usage of window `step` (NaN where a container has no sample)."""

    def observe_oom(self, step: int, containers: np.ndarray, memory: np.ndarray) -> None:
        """OOM kills in window `step`: container indices and memory in use (bytes)."""

    def decide(self, step: int, current: Requests) -> Requests:
        """Requests in force from window `step + 1` on.

        Return `current` values unchanged where the strategy's update policy
        would not act; every changed value counts as an applied change. NaN
        keeps the current value. The memory limit is not the strategy's to
        choose: the replay derives it from the memory request and
        `Fleet.memory_limit_ratio`, as the admission controller would.
        """
        ...


def observe_window(
    strategy: Strategy, step: int, cpu: np.ndarray, memory: np.ndarray, limit: np.ndarray
) -> np.ndarray:
    """Hand `strategy` one window as a closed loop does; returns the OOM kills (bool).

    A container whose memory exceeds the limit in force is killed: it uses no
    more than its limit, and the strategy learns of the kill with that memory.
    """
    oom = memory > limit  # NaN on either side: no kill
    if not oom.any():
        strategy.observe(step, cpu, memory)
        return oom
    killed = np.flatnonzero(oom)
    strategy.observe(step, cpu, np.where(oom, limit, memory))
    strategy.observe_oom(step, killed, limit[killed].copy())
    return oom


def differs(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Elementwise new != old, treating two NaNs as equal (a request left unset)."""
    return ~((new == old) | (np.isnan(new) & np.isnan(old)))


def admit(proposal: Requests, current: Requests, ratio: np.ndarray) -> Requests:
    """Apply a proposal as the admission step does: a NaN keeps the value in force,
    and the memory limit is the memory request times the limit / request ratio."""
    n = current.cpu.shape[0]
    cpu = np.asarray(proposal.cpu, dtype=np.float64)
    memory = np.asarray(proposal.memory, dtype=np.float64)
    if cpu.shape != (n,) or memory.shape != (n,):
        raise ValueError(f"a strategy must return requests of shape ({n},)")
    cpu = np.where(np.isnan(cpu), current.cpu, cpu)
    memory = np.where(np.isnan(memory), current.memory, memory)
    return Requests(cpu, memory, memory * ratio)
