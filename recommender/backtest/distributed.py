"""The dask engine: the same (block, strategy) tasks on a dask.distributed cluster.

With a scheduler address the tasks go to that cluster (its workers must be able
to import this package); without one a LocalCluster of `workers` single-threaded
processes is started for the run and closed after it. Blocks are scattered once
and shared by every strategy that replays them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from recommender.backtest.runner import ReplayTask, TaskOutcome, run_task
from recommender.backtest.settings import BacktestInputError, ExecutionSettings


def _run_on_worker(block: object, spec: object) -> TaskOutcome:
    return run_task(ReplayTask(block, spec))  # type: ignore[arg-type]


def run_dask(
    tasks: Sequence[ReplayTask],
    execution: ExecutionSettings,
    on_done: Callable[[TaskOutcome], None],
) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as error:  # pragma: no cover - dask is an optional extra
        raise BacktestInputError(
            "the dask engine needs dask[distributed]: pip install 'kube-tailor[dask]'"
        ) from error
    cluster = None
    if execution.scheduler is None:
        cluster = LocalCluster(  # no idle workers: --workers 100000 started them all
            n_workers=min(execution.worker_count(), max(len(tasks), 1)),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        )
        client = Client(cluster)
    else:
        try:
            client = Client(execution.scheduler, timeout="30s")
        except (OSError, ValueError) as error:  # ValueError: an address without a port
            raise BacktestInputError(
                f"cannot reach the dask scheduler at {execution.scheduler}: {error}"
            ) from error
    try:
        blocks = {task.block.index: task.block for task in tasks}
        scattered = {index: client.scatter(block) for index, block in blocks.items()}
        ordered = sorted(tasks, key=lambda task: task.cost, reverse=True)
        futures = [
            client.submit(_run_on_worker, scattered[task.block.index], task.spec, pure=False)
            for task in ordered
        ]
        for future in as_completed(futures):
            on_done(future.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
