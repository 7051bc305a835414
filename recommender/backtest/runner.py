"""Run a backtest: cut the history into blocks, replay every (block, strategy) pair
on the chosen engine, and combine the per-block sums into one result.

Pairs are independent, so the local engine spreads them over a process pool
and the dask engine over a cluster; either way the combination happens in a
fixed order, so both engines give identical numbers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext

import numpy as np
import pandas as pd

from recommender.backtest.container_blocks import ReplayBlock, cut_block, plan_blocks
from recommender.backtest.engine import Trajectory, replay
from recommender.backtest.history import ReplayHistory, prepare_history
from recommender.backtest.metrics import BlockMetrics, block_metrics
from recommender.backtest.registry import DEFAULT_STRATEGIES, StrategySpec, resolve_strategies
from recommender.backtest.result import BacktestResult, assemble
from recommender.backtest.settings import BacktestInputError, ExecutionSettings, ReplaySettings
from recommender.data.arrays import UsageArrays
from recommender.overrides import SettingsError

#: progress(done, total): container replays finished (containers x strategies).
ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class ReplayTask:
    block: ReplayBlock
    spec: StrategySpec

    @property
    def cost(self) -> float:
        """What the task is expected to take, for ordering only (longest first)."""
        return self.block.size * self.block.usage.n_windows * self.spec.relative_cost


@dataclass(frozen=True)
class TaskOutcome:
    strategy: str
    block_index: int
    size: int
    metrics: BlockMetrics


def run_task(task: ReplayTask) -> TaskOutcome:
    """Replay one strategy over one block and reduce it to metric sums (runs on workers)."""
    trajectory = guarded_replay(task.block, task.spec)
    metrics = block_metrics(task.block, trajectory)
    return TaskOutcome(task.spec.name, task.block.index, task.block.size, metrics)


def _context() -> BaseContext:
    """fork while this process has one thread (works from scripts without a main guard);
    spawn once other threads run (a progress bar, a dask client), since forking a
    process whose other threads may hold locks is unsafe."""
    if threading.active_count() == 1 and "fork" in get_all_start_methods():
        return get_context("fork")
    return get_context("spawn")


def run_local(
    tasks: Sequence[ReplayTask], workers: int, on_done: Callable[[TaskOutcome], None]
) -> None:
    """In this process when one worker (or one task) suffices, else a process pool."""
    ordered = sorted(tasks, key=lambda task: task.cost, reverse=True)
    if workers <= 1 or len(ordered) <= 1:
        for task in ordered:
            on_done(run_task(task))
        return
    with ProcessPoolExecutor(max_workers=min(workers, len(ordered)), mp_context=_context()) as pool:
        futures = [pool.submit(run_task, task) for task in ordered]
        for future in as_completed(futures):
            on_done(future.result())


def run_backtest(
    usage: pd.DataFrame | UsageArrays | ReplayHistory,
    events: pd.DataFrame | None = None,
    strategies: str | Sequence[str | StrategySpec] = DEFAULT_STRATEGIES,
    replay_settings: ReplaySettings | None = None,
    execution: ExecutionSettings | None = None,
    progress: ProgressCallback | None = None,
) -> BacktestResult:
    """Replay `strategies` over the usage history and return their metrics.

    `usage` is the canonical long frame (validated here), UsageArrays, or an
    already prepared ReplayHistory (then `events` and `replay_settings` were
    applied when it was prepared). Raises BacktestInputError on unusable input.
    """
    started = time.perf_counter()
    replay_settings = replay_settings or ReplaySettings()
    execution = execution or ExecutionSettings()
    specs = resolve_strategies(strategies)
    history = (
        usage
        if isinstance(usage, ReplayHistory)
        else prepare_history(usage, events, replay_settings)
    )
    blocks = [
        cut_block(history, index, rows)
        for index, rows in enumerate(plan_blocks(history, execution.block_size))
    ]
    tasks = [ReplayTask(block, spec) for block in blocks for spec in specs]
    total = sum(task.block.size for task in tasks)
    outcomes: dict[tuple[str, int], BlockMetrics] = {}
    done = 0

    def collect(outcome: TaskOutcome) -> None:
        nonlocal done
        outcomes[(outcome.strategy, outcome.block_index)] = outcome.metrics
        done += outcome.size
        if progress is not None:
            progress(done, total)

    if progress is not None:
        progress(0, total)
    if execution.engine == "dask":
        from recommender.backtest.distributed import run_dask

        run_dask(tasks, execution, collect)
    else:
        run_local(tasks, execution.worker_count(), collect)
    return assemble(
        history,
        [spec.name for spec in specs],
        outcomes,
        history.usage.step,
        history.warm_up_windows * history.usage.step,
        time.perf_counter() - started,
    )


def replay_rows(
    history: ReplayHistory, spec: StrategySpec, rows: Sequence[int]
) -> tuple[ReplayBlock, Trajectory]:
    """Replay some containers alone and keep the full trajectory (plots, analysis)."""
    block = cut_block(history, 0, np.asarray(sorted(rows), dtype=np.int64))
    return block, guarded_replay(block, spec)


def guarded_replay(block: ReplayBlock, spec: StrategySpec) -> Trajectory:
    """Replay one strategy. Settings the history cannot take (e.g. its step), an
    imported strategy that breaks, and a built-in one that breaks on the user's settings
    (`history_days=1e308` overflowing deep in numpy) are input errors that name the
    strategy; a built-in strategy that breaks on its defaults is a bug and keeps its
    traceback. SystemExit from the user's code counts as breaking: let through, it ended
    the run with status 0 and no output. An infinite request (a margin of 1e308) would
    make a report of Infinity and NaN slack, and a negative one negative core-hours, so
    both are refused too."""
    phase = "its factory failed"
    given = " with the settings given" if spec.configured else ""
    try:
        strategy = spec.build(block.usage)
        phase = "failed in the replay"
        trajectory = replay(block, strategy)
    except BacktestInputError:
        raise
    except SettingsError as error:
        raise BacktestInputError(f"strategy {spec.name!r}: {error}") from error
    except (Exception, SystemExit) as error:
        if not (spec.imported or spec.configured):
            raise
        raise BacktestInputError(
            f"strategy {spec.name!r}: {phase}{given}: {type(error).__name__}: {error}"
        ) from error
    requests = (trajectory.cpu, trajectory.memory)
    if any(np.isinf(values).any() for values in requests):
        raise BacktestInputError(f"strategy {spec.name!r} requested an infinite amount{given}")
    if any((values < 0).any() for values in requests):  # NaN (unset) compares False
        raise BacktestInputError(f"strategy {spec.name!r} requested a negative amount{given}")
    return trajectory
