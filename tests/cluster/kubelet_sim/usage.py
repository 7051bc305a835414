"""Simulated container usage: CPU / memory series, a CPU-seconds counter and OOM kills.

A series gives what the container wants. Under a CPU limit it gets no more than
the limit, and the rest is counted as CFS-throttled CPU-seconds (what cAdvisor's
`container_cpu_cfs_throttled_seconds_total` reports, see recommender.data.throttling).

A container's series starts when the container (re)starts, so a container
that is OOM-killed and restarted climbs its memory curve again, as a leaking
process would. Times are wall-clock seconds (time.time()).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

OOM_EXIT_CODE = 137


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
        applied CPU limit (cores; the excess is throttled); the memory of `now` is
        compared with the applied memory limit.
        """
        elapsed_before = self.last_update - self.started_at
        wanted, _ = series.at(elapsed_before)
        interval = max(0.0, now - self.last_update)
        granted = wanted if cpu_limit is None else min(wanted, cpu_limit)
        self.cpu_seconds += granted * interval
        self.throttled_seconds += (wanted - granted) * interval
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
        self.cpu_cores, self.memory = series.at(0.0)
