"""Simulated container usage: CPU / memory series, a CPU-seconds counter and OOM kills.

A series gives what the container wants. Under a CPU limit it gets no more than
the limit, and the rest is counted as CFS-throttled CPU-seconds (what cAdvisor's
`container_cpu_cfs_throttled_seconds_total` reports, see recommender.data.throttling).
Under a memory limit, a working set near the limit stalls the container's tasks in
reclaim: the pressure stall seconds cAdvisor exports (`memory_pressure_shares`).

A container's series starts when the container (re)starts, so a container
that is OOM-killed and restarted climbs its memory curve again, as a leaking
process would. Times are wall-clock seconds (time.time()).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

OOM_EXIT_CODE = 137
# The share of its memory limit where a container's reclaim starts to stall its tasks.
PRESSURE_ONSET = 0.8
FULL_AT_LIMIT = 0.6  # the stalled (`full`) share just below the limit


def memory_pressure_shares(memory: int, limit: int | None) -> tuple[float, float]:
    """(waiting, stalled): the shares of wall time some / all of a container's tasks wait
    for memory, as PSI's `some` and `full` lines count them, at a working set of `memory`.

    A model, not the kernel's law: nothing below PRESSURE_ONSET of the limit (or without
    one), then rising with the square of how far the working set is into the last 20 %
    of the limit, to FULL_AT_LIMIT stalled at the limit itself. `some` is never below
    `full` (every stall of all tasks is a stall of some). At 90 % of its limit a container
    is stalled 15 % of the time, at 95 % 34 %.
    """
    if not limit or memory <= PRESSURE_ONSET * limit:
        return 0.0, 0.0
    depth = min(1.0, (memory / limit - PRESSURE_ONSET) / (1 - PRESSURE_ONSET))
    stalled = FULL_AT_LIMIT * depth**2
    return min(1.0, 1.5 * stalled + 0.2 * depth), stalled


@dataclass(frozen=True)
class UsageSeries:
    """Per-step CPU (cores) and memory (bytes) of one container.

    Step i covers [i*step, (i+1)*step) seconds after the container started.
    After the last step the last values hold, or the series starts over when
    `repeat` is set. The two sequences may differ in length.
    """

    cpu_cores: Sequence[float] = (0.0,)
    memory_bytes: Sequence[int] = (0,)
    step_seconds: float = 1.0
    repeat: bool = False

    def __post_init__(self) -> None:
        if not self.cpu_cores or not self.memory_bytes:
            raise ValueError("a usage series needs at least one CPU and one memory value")
        if self.step_seconds <= 0:
            raise ValueError("step_seconds must be positive")

    def _index(self, elapsed: float, length: int) -> int:
        step = max(0, math.floor(elapsed / self.step_seconds))
        return step % length if self.repeat else min(step, length - 1)

    def at(self, elapsed: float) -> tuple[float, int]:
        """(cpu cores, memory bytes) `elapsed` seconds after the container started."""
        return (
            float(self.cpu_cores[self._index(elapsed, len(self.cpu_cores))]),
            int(self.memory_bytes[self._index(elapsed, len(self.memory_bytes))]),
        )

    @classmethod
    def constant(cls, cpu_cores: float, memory_bytes: int) -> UsageSeries:
        return cls((cpu_cores,), (memory_bytes,))


IDLE = UsageSeries()


@dataclass(frozen=True)
class Termination:
    """How a container instance ended (shown as lastState.terminated)."""

    reason: str
    exit_code: int
    started_at: float
    finished_at: float


@dataclass
class ContainerRuntime:
    """The running instance of one container, as cAdvisor would see it."""

    name: str
    started_at: float
    last_update: float
    restart_count: int = 0
    cpu_seconds: float = 0.0
    throttled_seconds: float = 0.0
    memory_waiting_seconds: float = 0.0  # PSI memory `some` total
    memory_stalled_seconds: float = 0.0  # PSI memory `full` total
    cpu_cores: float = 0.0
    memory: int = 0
    last_termination: Termination | None = None
    oom_kills: int = field(default=0)

    def advance(
        self,
        now: float,
        series: UsageSeries,
        memory_limit: int | None,
        cpu_limit: float | None = None,
    ) -> bool:
        """Move usage to `now`; returns True when the container was OOM-killed (and restarted).

        CPU accrues at the rate of the step the interval started in, up to the
        applied CPU limit (cores; the excess is throttled), and memory stalls at the
        working set it started with; the memory of `now` is compared with the applied
        memory limit.
        """
        elapsed_before = self.last_update - self.started_at
        wanted, _ = series.at(elapsed_before)
        interval = max(0.0, now - self.last_update)
        granted = wanted if cpu_limit is None else min(wanted, cpu_limit)
        self.cpu_seconds += granted * interval
        self.throttled_seconds += (wanted - granted) * interval
        waiting, stalled = memory_pressure_shares(self.memory, memory_limit)
        self.memory_waiting_seconds += waiting * interval
        self.memory_stalled_seconds += stalled * interval
        wanted_now, self.memory = series.at(now - self.started_at)
        self.cpu_cores = wanted_now if cpu_limit is None else min(wanted_now, cpu_limit)
        self.last_update = now
        if memory_limit is not None and self.memory > memory_limit:
            self._restart(now, "OOMKilled", OOM_EXIT_CODE, series)
            return True
        return False

    def _restart(self, now: float, reason: str, exit_code: int, series: UsageSeries) -> None:
        self.last_termination = Termination(reason, exit_code, self.started_at, now)
        self.restart_count += 1
        self.oom_kills += reason == "OOMKilled"
        self.started_at = now
        self.cpu_seconds = 0.0  # a new container: cAdvisor's counters start over
        self.throttled_seconds = 0.0
        self.memory_waiting_seconds = self.memory_stalled_seconds = 0.0  # a new cgroup
        self.cpu_cores, self.memory = series.at(0.0)
