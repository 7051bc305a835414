"""Backtest settings, grouped: what is replayed (ReplaySettings) and where (ExecutionSettings).

Both are frozen so that a run is fully described by its inputs and these two
values; nothing is read from globals or the environment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from tailor import durations
from tailor.durations import DAY


class BacktestInputError(ValueError):
    """History, events or settings a backtest cannot run on, with the reason."""


def parse_duration(text: str) -> int:
    """Whole seconds in a duration like '1d', '6h', '90m' (the CLI's one duration syntax).

    A fraction of a second is refused, not rounded: `--split 1ms` became 0 s and was
    then called "not a positive duration".
    """
    try:
        span = durations.parse_duration(text)
    except durations.DurationError as error:
        raise BacktestInputError(str(error)) from error
    if span % timedelta(seconds=1):
        if span < timedelta(seconds=1):
            raise BacktestInputError(f"{text!r} is below one second: whole seconds are expected")
        raise BacktestInputError(f"{text!r} is not a whole number of seconds")
    return int(span.total_seconds())


def format_duration(seconds: int) -> str:
    """The shortest exact form: 86400 -> '1d', 21600 -> '6h'."""
    return durations.format_duration(timedelta(seconds=seconds))


@dataclass(frozen=True)
class ReplaySettings:
    """What a replay evaluates.

    warm_up_seconds: per container, counted from its first sample; those windows
        feed the strategies but are left out of the metrics.
    default_memory_limit_ratio: memory limit / request used where the data has no
        original limit and request to take the ratio from (1.0 = limit equals request).
    """

    warm_up_seconds: int = DAY
    default_memory_limit_ratio: float = 1.0

    def __post_init__(self) -> None:
        if self.warm_up_seconds < 0:
            raise BacktestInputError("warm-up cannot be negative")
        if self.default_memory_limit_ratio < 1.0:
            raise BacktestInputError("a memory limit below the request is not allowed (ratio < 1)")


EngineName = Literal["local", "dask"]


@dataclass(frozen=True)
class ExecutionSettings:
    """Where the blocks of containers run.

    engine: "local" (a process pool on this machine) or "dask" (a dask.distributed
        cluster at `scheduler`, or a LocalCluster of `workers` processes when None).
    workers: parallel processes; None = the machine's cores.
    block_size: containers stepped together by one numpy loop; None = automatic.
    """

    engine: EngineName = "local"
    workers: int | None = None
    scheduler: str | None = None
    block_size: int | None = None

    def __post_init__(self) -> None:
        if self.engine not in ("local", "dask"):
            raise BacktestInputError(f"unknown engine {self.engine!r}: use local or dask")
        if self.workers is not None and self.workers < 1:
            raise BacktestInputError("workers must be at least 1")
        if self.block_size is not None and self.block_size < 1:
            raise BacktestInputError("block size must be at least 1")
        if self.scheduler is not None and self.engine != "dask":
            raise BacktestInputError("a scheduler address needs the dask engine")

    def worker_count(self) -> int:
        return self.workers or os.cpu_count() or 1
