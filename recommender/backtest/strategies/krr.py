"""`krr`: the simple strategy of Robusta KRR.

CPU request = p95 of the CPU usage over the history window (14 days), memory =
the maximum memory usage over that window plus 15 %, at least KRR's minimums
(10 millicores, 100 MiB). KRR itself only reports;
as its enforcer would apply it, the backtest recomputes every hour and resizes
when a value moved by 10 % or more, and right after an OOM kill (the restarted
container is admitted with the latest recommendation). KRR does not read OOM
events: it learns from the memory samples, which a kill caps at the limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from recommender.backtest.strategies.building_blocks import (
    Floor,
    HysteresisPolicy,
    PolicyUpdates,
    grid_windows,
    round_requests,
    row_quantile,
)
from recommender.overrides import NON_NEGATIVE, POSITIVE, Checked, within
from recommender.replay import Fleet, Requests
from tailor.durations import DAY, HOUR


@dataclass(frozen=True)
class KrrSettings(Checked):
    history_seconds: int = field(default=14 * DAY, metadata=POSITIVE)
    cpu_percentile: float = field(default=0.95, metadata=within("(0, 1]"))
    memory_buffer: float = field(default=0.15, metadata=NON_NEGATIVE)
    update_period_seconds: int = field(default=HOUR, metadata=POSITIVE)
    floor: Floor = field(default_factory=Floor)
    policy: HysteresisPolicy = field(default_factory=HysteresisPolicy)


class KrrStrategy:
    """Percentile CPU and max-plus-buffer memory over a sliding window."""

    name = "krr"

    def __init__(self, settings: KrrSettings | None = None) -> None:
        self.settings = settings or KrrSettings()
        self._cpu = np.empty((0, 0))
        self._memory = np.empty((0, 0))
        self._filled = 0
        self._period = 1
        self._first_window = 0
        self._oom = np.zeros(0, dtype=bool)
        self._updates = PolicyUpdates(self.settings.policy)
        self._recommended: tuple[np.ndarray, np.ndarray] | None = None

    def reset(self, fleet: Fleet) -> None:
        width = grid_windows(self.settings, "history_seconds", fleet.step)
        self._cpu = np.full((fleet.size, width), np.nan)
        self._memory = np.full((fleet.size, width), np.nan)
        self._filled = 0
        self._period = grid_windows(self.settings, "update_period_seconds", fleet.step)
        self._first_window = fleet.start // fleet.step  # periods align to absolute time
        self._oom = np.zeros(fleet.size, dtype=bool)
        self._updates.reset(fleet)
        self._recommended = None

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        column = self._filled % self._cpu.shape[1]
        self._cpu[:, column] = cpu
        self._memory[:, column] = memory
        self._filled += 1

    def observe_oom(self, step: int, containers: np.ndarray, memory: np.ndarray) -> None:
        self._oom[containers] = True

    def _recommend(self, rows: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        used = min(self._filled, self._cpu.shape[1])
        cpu = row_quantile(self._cpu[rows, :used], self.settings.cpu_percentile)
        peak = np.fmax.reduce(self._memory[rows, :used], axis=1)
        return round_requests(cpu, peak * (1 + self.settings.memory_buffer), self.settings.floor)

    def decide(self, step: int, current: Requests) -> Requests:
        due = (self._first_window + step + 1) % self._period == 0 or self._recommended is None
        if due:
            self._recommended = self._recommend(slice(None))
        elif self._oom.any():  # between periods only the OOM-killed are re-admitted
            assert self._recommended is not None
            killed = np.flatnonzero(self._oom)
            cpu, memory = self._recommended
            cpu[killed], memory[killed] = self._recommend(killed)
        else:
            return current
        cpu, memory = self._recommended
        if not due:
            cpu = np.where(self._oom, cpu, np.nan)
            memory = np.where(self._oom, memory, np.nan)
        decided = self._updates.apply(step, current, cpu, memory, self._oom)
        self._oom[:] = False
        return decided
