"""`autopilot`: Google Autopilot's moving-window recommender (EuroSys 2020).

Samples go into decaying histograms, weight 2^(-age / half-life): 12 h for CPU,
48 h for memory. CPU takes the load-adjusted p95 (serving jobs), memory the
p98; each gets a safety margin (10 % CPU, 15 % memory, within the paper's
10-15 %), and the recommendation is the maximum of those computed over the last
hour, so it rises at once and falls only slowly. Requests never go below
10 millicores and 100 MiB (the same floor as krr).

Update policy: every window, resize when a value moved by 10 % or more, and
right after an OOM kill. An OOM kill is a memory sample of 1.2x the memory in
use, and that value also joins the hour's recommendations, so the next request
clears it at once (a single sample would hardly move a p98).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from recommender.backtest.strategies.building_blocks import (
    DecayingHistograms,
    Floor,
    HysteresisPolicy,
    PolicyUpdates,
    grid_windows,
    round_requests,
)
from recommender.overrides import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, Checked, within
from recommender.replay import Fleet, Requests
from tailor.durations import HOUR


@dataclass(frozen=True)
class AutopilotSettings(Checked):
    cpu_half_life_seconds: float = field(default=12 * HOUR, metadata=POSITIVE)
    memory_half_life_seconds: float = field(default=48 * HOUR, metadata=POSITIVE)
    cpu_percentile: float = field(default=0.95, metadata=within("(0, 1]"))
    memory_percentile: float = field(default=0.98, metadata=within("(0, 1]"))
    cpu_margin: float = field(default=0.10, metadata=NON_NEGATIVE)
    memory_margin: float = field(default=0.15, metadata=NON_NEGATIVE)
    max_over_seconds: int = field(default=HOUR, metadata=NON_NEGATIVE)
    oom_bump_ratio: float = field(default=1.2, metadata=AT_LEAST_ONE)
    floor: Floor = field(default_factory=Floor)
    policy: HysteresisPolicy = field(default_factory=HysteresisPolicy)


class AutopilotStrategy:
    """Decaying percentiles plus margin, held at their maximum over the last hour."""

    name = "autopilot"

    def __init__(self, settings: AutopilotSettings | None = None) -> None:
        self.settings = settings or AutopilotSettings()
        self._fleet: Fleet | None = None
        self._cpu_hist: DecayingHistograms | None = None
        self._memory_hist: DecayingHistograms | None = None
        self._recent = np.empty((0, 0, 0))
        self._oom = np.zeros(0, dtype=bool)
        self._updates = PolicyUpdates(self.settings.policy)
        self._bump = np.zeros(0)

    def reset(self, fleet: Fleet) -> None:
        s = self.settings
        self._fleet = fleet
        self._cpu_hist = DecayingHistograms(fleet.size, 0.001, 1000.0, s.cpu_half_life_seconds)
        self._memory_hist = DecayingHistograms(fleet.size, 1e6, 1e13, s.memory_half_life_seconds)
        # 0: the latest recommendation alone, as one window
        depth = grid_windows(s, "max_over_seconds", fleet.step) if s.max_over_seconds else 1
        self._recent = np.full((depth, 2, fleet.size), np.nan)
        self._oom = np.zeros(fleet.size, dtype=bool)
        self._updates.reset(fleet)
        self._bump = np.full(fleet.size, np.nan)

    def _histograms(self) -> tuple[Fleet, DecayingHistograms, DecayingHistograms]:
        if self._fleet is None or self._cpu_hist is None or self._memory_hist is None:
            raise RuntimeError("reset() must be called before the replay")
        return self._fleet, self._cpu_hist, self._memory_hist

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        fleet, cpu_hist, memory_hist = self._histograms()
        cpu_hist.add(fleet.time_of(step), cpu)
        memory_hist.add(fleet.time_of(step), memory)

    def observe_oom(self, step: int, containers: np.ndarray, memory: np.ndarray) -> None:
        fleet, _, memory_hist = self._histograms()
        bumped = memory * self.settings.oom_bump_ratio
        memory_hist.add_rows(fleet.time_of(step), containers, bumped)
        self._oom[containers] = True
        self._bump[containers] = bumped

    def decide(self, step: int, current: Requests) -> Requests:
        s = self.settings
        _, cpu_hist, memory_hist = self._histograms()
        cpu = cpu_hist.quantile(s.cpu_percentile, load_adjusted=True) * (1 + s.cpu_margin)
        memory = memory_hist.quantile(s.memory_percentile) * (1 + s.memory_margin)
        self._recent[step % self._recent.shape[0]] = (cpu, np.fmax(memory, self._bump))
        held = np.fmax.reduce(self._recent, axis=0)
        cpu, memory = round_requests(held[0], held[1], s.floor)
        decided = self._updates.apply(step, current, cpu, memory, self._oom)
        self._oom[:] = False
        self._bump[:] = np.nan
        return decided
