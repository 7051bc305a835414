"""`oracle`: the hindsight limit no real strategy can beat.

Built with the block's whole future, it requests for each update period exactly
the largest CPU usage and memory peak that period will see, so it never falls
short and never OOMs. With the default period of one window its requests equal
the usage, so its slack is zero and its footprint is the footprint of usage
itself: the floor for every strategy's slack and footprint (not for churn: it
resizes whenever usage moves). A longer period (e.g. `oracle-1h` in the
registry) bounds what a strategy resizing that often could achieve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.data.arrays import UsageArrays
from recommender.replay import Fleet, Requests


@dataclass(frozen=True)
class OracleSettings:
    update_period_seconds: int = 0  # 0 = every window


def period_maxima(values: np.ndarray, period: int, shift: int = 0) -> np.ndarray:
    """(series, windows) -> each window replaced by the max of its period (NaN-aware).

    Periods start where the absolute window number is a multiple of `period`;
    `shift` is the absolute number of window 0 modulo `period`.
    """
    n, windows = values.shape
    periods = -(-(windows + shift) // period)
    padded = np.full((n, periods * period), np.nan)
    padded[:, shift : shift + windows] = values
    maxima = np.fmax.reduce(padded.reshape(n, periods, period), axis=2)
    return np.repeat(maxima, period, axis=1)[:, shift : shift + windows]


class OracleStrategy:
    """Requests = the future's per-period maxima (NaN periods keep the last request)."""

    def __init__(
        self, future: UsageArrays, settings: OracleSettings | None = None, name: str = "oracle"
    ) -> None:
        self.settings = settings or OracleSettings()
        self.name = name
        self._future = future
        self._cpu = np.empty((0, 0))
        self._memory = np.empty((0, 0))

    def reset(self, fleet: Fleet) -> None:
        if fleet.size != self._future.n_series or fleet.start != self._future.start:
            raise ValueError("the oracle must be built with the future of the block it replays")
        period = max(1, self.settings.update_period_seconds // fleet.step)
        shift = (fleet.start // fleet.step) % period
        self._cpu = np.ascontiguousarray(period_maxima(self._future.cpu, period, shift).T)
        self._memory = np.ascontiguousarray(period_maxima(self._future.memory, period, shift).T)

    def observe(self, step: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        """Nothing to learn: the oracle already knows."""

    def observe_oom(self, step: int, containers: np.ndarray, memory: np.ndarray) -> None:
        """Cannot happen once the oracle's requests are in force."""

    def decide(self, step: int, current: Requests) -> Requests:
        following = step + 1
        if following >= self._cpu.shape[0]:
            return current
        cpu, memory = self._cpu[following], self._memory[following]
        return Requests(
            np.where(np.isnan(cpu), current.cpu, cpu),
            np.where(np.isnan(memory), current.memory, memory),
            current.memory_limit,
        )
