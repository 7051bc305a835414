"""Steer the fleet's realized CPU shortfall to a share of the upstream VPA's.

The margins are quantiles of errors fitted on the very past they are replayed
on, so out of sample the fleet is short more often than planned, and by how
much depends on the workloads. A fixed share of the VPA's rate therefore spends
the allowance fully on one fleet and leaves part of it unused on another. A
replay or a live loop sees which windows each request was in force for, so it
measures two ratios and plans for `goal` x the VPA's rate x bias / inflation:

- inflation: our realized shortfall over the rate the margins were planned for;
- bias: the shortfall of a reference run alongside on the same usage (the
  upstream VPA with its updater, in closed loop) over the rate the planner's
  emulation of the VPA's estimator gave for the same windows.

Both start from an assumption (inflation `goal` / `vpa_parity_factor`, bias 1)
worth `prior_windows` expected shortfall windows, and forget at a half-life.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.forecast.settings import DAY, FeedbackSettings
from recommender.replay import Fleet, Requests, Strategy, admit, observe_window

MIN_FACTOR = 0.2  # the planned share of the VPA's rate stays within these bounds,
MAX_FACTOR = 1.5  # whatever a short or odd stretch of history suggests


def _shortfalls(usage: np.ndarray, request: np.ndarray) -> tuple[int, int]:
    """Windows short and windows judged (usage and a request both known)."""
    judged = ~(np.isnan(usage) | np.isnan(request))
    short = judged & (np.nan_to_num(usage) > np.nan_to_num(request))
    return int(np.count_nonzero(short)), int(np.count_nonzero(judged))


@dataclass
class ShortfallFeedback:
    """Exponentially decayed counts behind the two ratios (see the module)."""

    settings: FeedbackSettings
    prior_inflation: float
    decay: float
    realized: float = 0.0
    planned: float = 0.0
    reference_short: float = 0.0
    reference_emulated: float = 0.0

    @classmethod
    def start(
        cls, settings: FeedbackSettings, parity_factor: float, step: int
    ) -> ShortfallFeedback:
        """Before any window is seen, assume the planner's starting factor was right."""
        windows = settings.half_life_days * DAY / step
        return cls(settings, settings.goal / parity_factor, 0.5 ** (1.0 / windows))

    def observe(
        self,
        usage: np.ndarray,
        request: np.ndarray,
        planned_rate: float,
        reference: np.ndarray | None = None,
        emulated_rate: float = float("nan"),
    ) -> None:
        """One window of CPU `usage` against our `request` in force (planned at
        `planned_rate`) and the `reference`'s request (emulated at `emulated_rate`)."""
        d = self.decay
        short, judged = _shortfalls(usage, request)
        self.realized = self.realized * d + short
        self.planned = self.planned * d + planned_rate * judged
        self.reference_short *= d
        self.reference_emulated *= d
        if reference is not None and not np.isnan(emulated_rate):
            short, judged = _shortfalls(usage, reference)
            self.reference_short += short
            self.reference_emulated += emulated_rate * judged

    def inflation(self) -> float:
        """Our realized over planned shortfall, shrunk towards the starting assumption."""
        prior = self.settings.prior_windows
        return (self.realized + self.prior_inflation * prior) / (self.planned + prior)

    def bias(self) -> float:
        """The reference's realized over emulated shortfall, shrunk towards 1."""
        prior = self.settings.prior_windows
        return (self.reference_short + prior) / (self.reference_emulated + prior)

    def parity_factor(self) -> float:
        """The share of the emulated VPA rate to plan for so realized lands on `goal`."""
        factor = self.settings.goal * self.bias() / self.inflation()
        return float(np.clip(factor, MIN_FACTOR, MAX_FACTOR))


class ReferenceLoop:
    """A reference strategy replayed in closed loop on the usage we observe.

    It follows the replay's own rules (`observe_window`: OOM-killed over its own
    memory limit; `admit`: a NaN proposal keeps the request in force, the limit
    follows the request). Its requests are never applied: only its shortfall is
    counted.
    """

    def __init__(self, strategy: Strategy) -> None:
        self.strategy = strategy
        self.current = Requests.unset(0)
        self.ratio = np.ones(0)

    def reset(self, fleet: Fleet) -> None:
        self.strategy.reset(fleet)
        self.current = Requests.unset(fleet.size)
        self.ratio = fleet.limit_ratio()

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        observe_window(self.strategy, step, cpu, memory, self.current.memory_limit)

    def decide(self, step: int) -> None:
        proposal = self.strategy.decide(step, self.current.copy())
        self.current = admit(proposal, self.current, self.ratio)
