"""`vpa`: the upstream VPA recommender (our vectorised model, upstream defaults)
applied with the upstream updater's rules (see vpa_updater.py).

Each replayed container is its own aggregate (its own VPA), so a container's
result never depends on which other containers share its block. The model is
fed every window as the live recommender's metrics would feed it; an OOM kill
reaches it as upstream's OOM observer reports it (the memory request in force).
The recommendation is recomputed every `recommend_every_seconds` (upstream's
loop runs every minute, so by default every window of a 5-minute trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from recommender.backtest.strategies.building_blocks import grid_windows
from recommender.backtest.strategies.vpa_updater import VpaUpdaterSettings, update_candidates
from recommender.replay import Fleet, Requests
from recommender.vpa.estimators import VpaRecommendation
from recommender.vpa.model import VpaModel
from recommender.vpa.settings import VpaSettings


@dataclass(frozen=True)
class VpaStrategySettings:
    model: VpaSettings = field(default_factory=VpaSettings)
    updater: VpaUpdaterSettings = field(default_factory=VpaUpdaterSettings)
    recommend_every_seconds: int = 60


class VpaStrategy:
    """VpaModel + the updater: the baseline every other strategy is compared with."""

    name = "vpa"

    def __init__(self, settings: VpaStrategySettings | None = None) -> None:
        self.settings = settings or VpaStrategySettings()
        self._fleet: Fleet | None = None
        self._model: VpaModel | None = None
        self._bounds: VpaRecommendation | None = None
        self._every = 1
        self._memory_request = np.zeros(0)
        self._started = np.zeros(0)
        self._oom = np.zeros(0, dtype=bool)

    def reset(self, fleet: Fleet) -> None:
        n = fleet.size
        self._fleet = fleet
        self._model = VpaModel(np.arange(n), n, self.settings.model)
        self._bounds = None
        self._every = grid_windows(self.settings, "recommend_every_seconds", fleet.step)
        self._memory_request = np.full(n, np.nan)
        self._started = np.full(n, np.nan)  # UNIX seconds the pod (re)started
        self._oom = np.zeros(n, dtype=bool)

    def _state(self) -> tuple[Fleet, VpaModel]:
        if self._fleet is None or self._model is None:
            raise RuntimeError("reset() must be called before the replay")
        return self._fleet, self._model

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        fleet, model = self._state()
        now = fleet.time_of(step)
        model.add_window(now, cpu, memory)
        first_seen = np.isnan(self._started) & ~(np.isnan(cpu) & np.isnan(memory))
        self._started[first_seen] = now

    def observe_oom(self, step: int, containers: np.ndarray, memory: np.ndarray) -> None:
        fleet, model = self._state()
        request = np.where(
            np.isnan(self._memory_request[containers]), memory, self._memory_request[containers]
        )
        model.add_oom(containers, np.full(containers.size, fleet.time_of(step)), request)
        self._oom[containers] = True

    def _recommend(self, step: int) -> VpaRecommendation:
        fleet, model = self._state()
        due = (fleet.start // fleet.step + step) % self._every == 0  # absolute time
        if self._bounds is None or due or self._oom.any():
            self._bounds = model.recommend()
        return self._bounds

    def decide(self, step: int, current: Requests) -> Requests:
        fleet, _ = self._state()
        bounds = self._recommend(step)
        now_next = fleet.time_of(step + 1)
        age = now_next - self._started
        seen = ~np.isnan(self._started)
        act = seen & update_candidates(current, bounds, age, self._oom, self.settings.updater)
        self._oom[:] = False
        cpu = np.where(act, bounds.cpu_target, current.cpu)
        memory = np.where(act, bounds.memory_target, current.memory)
        restarted = act & ((cpu != current.cpu) | (memory != current.memory))
        self._started[restarted] = now_next
        self._memory_request = memory
        return Requests(cpu, memory, current.memory_limit)
