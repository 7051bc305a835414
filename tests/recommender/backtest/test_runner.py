"""Whole runs: determinism across engines and block sizes, bad input, events, the JSON contract."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from recommender.backtest import (
    METRIC_NAMES,
    BacktestInputError,
    ExecutionSettings,
    ReplaySettings,
    StrategySpec,
    parse_duration,
    resolve_strategies,
    run_backtest,
)
from recommender.data.synthetic import demo_fleet
from tests.recommender.backtest.helpers import (
    GIB,
    PER_DAY,
    START,
    days,
    fixed_spec,
    history,
    make_fixed,
)

SERIAL = ExecutionSettings(workers=1)


def small_fleet() -> tuple[pd.DataFrame, pd.DataFrame]:
    return demo_fleet(days=3)


def test_same_input_same_output() -> None:
    usage, events = small_fleet()
    first = run_backtest(usage, events, execution=SERIAL)
    second = run_backtest(usage, events, execution=SERIAL)
    assert first.to_dict() == second.to_dict()
    pd.testing.assert_frame_equal(first.per_container, second.per_container)


def test_process_pool_and_block_size_do_not_change_the_numbers() -> None:
    usage, events = small_fleet()
    serial = run_backtest(
        usage, events, ["krr", "oracle", StrategySpec("fixed", make_fixed)], execution=SERIAL
    )
    pooled = run_backtest(
        usage,
        events,
        ["krr", "oracle", StrategySpec("fixed", make_fixed)],
        execution=ExecutionSettings(workers=2, block_size=2),
    )
    assert serial.to_dict() == pooled.to_dict()
    pd.testing.assert_frame_equal(serial.per_container, pooled.per_container)


def test_json_contract() -> None:
    result = run_backtest(history(np.full(2 * PER_DAY, 0.5)), strategies="krr", execution=SERIAL)
    document = json.loads(result.to_json())
    assert set(document) == {"containers", "container_days", "strategies"}
    assert document["containers"] == 1
    assert document["container_days"] == pytest.approx(1.0)
    assert list(document["strategies"]["krr"]) == list(METRIC_NAMES)


def test_cpu_only_data_leaves_memory_metrics_undefined() -> None:
    frame = history(np.full(2 * PER_DAY, 0.5), np.full(2 * PER_DAY, np.nan))
    result = run_backtest(frame, strategies="vpa,krr,autopilot,oracle", execution=SERIAL)
    for name, metrics in result.to_dict()["strategies"].items():
        assert metrics["memory_relative_slack"] is None, name
        assert metrics["memory_gib_hours_requested"] is None, name
        assert metrics["cpu_relative_slack"] is not None, name
        assert metrics["oom_per_container_day"] == 0.0


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (history(np.full(2 * PER_DAY, 0.5)).iloc[:0], "empty"),
        (history(np.full(2 * PER_DAY, 0.5)).iloc[:1], "single timestamp"),
        (history(np.full(2 * PER_DAY, 0.5)).iloc[::-1], "unsorted"),
        (history(np.full(2 * PER_DAY, 0.5)).assign(cpu=-1.0), "negative"),
        (history(np.full(PER_DAY // 2, 0.5)), "leaves no window"),
    ],
    ids=["empty", "one-sample", "unsorted", "negative", "shorter-than-warm-up"],
)
def test_bad_input_gets_a_clear_error(frame: pd.DataFrame, message: str) -> None:
    with pytest.raises(BacktestInputError, match=message):
        run_backtest(frame, strategies="krr", execution=SERIAL)


def test_unknown_strategy_names_the_known_ones() -> None:
    with pytest.raises(BacktestInputError, match=r"unknown strategy .vpaa.: choose from vpa, krr"):
        run_backtest(history(np.full(2 * PER_DAY, 0.5)), strategies="vpaa", execution=SERIAL)
    with pytest.raises(BacktestInputError, match="twice"):
        run_backtest(history(np.full(2 * PER_DAY, 0.5)), strategies="krr,krr")


def test_imported_factories_plug_in_by_name() -> None:
    name = "tests.recommender.backtest.helpers:make_fixed"
    result = run_backtest(history(np.full(2 * PER_DAY, 0.5)), strategies=name, execution=SERIAL)
    assert result.summary[name]["cpu_relative_slack"] == pytest.approx(0.5)
    labelled = run_backtest(
        history(np.full(2 * PER_DAY, 0.5)), strategies=f"mine={name}", execution=SERIAL
    )
    assert list(labelled.summary) == ["mine"]
    with pytest.raises(BacktestInputError, match="cannot import"):
        run_backtest(history(np.full(2 * PER_DAY, 0.5)), strategies="no.such.module:make")


@pytest.mark.parametrize(
    ("strategies", "message"),
    [
        ("vpa=tests.recommender.backtest.helpers:make_fixed,krr", "the built-in name vpa:"),
        ("krr,oracle = tests.recommender.backtest.helpers:make_fixed", "the built-in name oracle"),
        (
            "a=tests.recommender.backtest.helpers:make_fixed,a=recommender.backtest.registry:"
            "make_krr",
            "strategy named twice: a",
        ),
    ],
)
def test_an_imported_label_cannot_pass_for_another_strategy(strategies: str, message: str) -> None:
    """Labelled `vpa`, an imported factory made every 'ratio to vpa' a ratio to itself."""
    with pytest.raises(BacktestInputError, match=message):
        resolve_strategies(strategies)


def test_short_series_are_skipped_and_counted() -> None:
    long = history(np.full(2 * PER_DAY, 0.5), pods=["long"])
    short = history(np.full(PER_DAY // 2, 0.5), pods=["short"])
    result = run_backtest(pd.concat([long, short]), strategies="krr", execution=SERIAL)
    assert (result.containers, result.unevaluated_containers) == (1, 1)
    assert result.per_container["pod"].tolist() == ["long"]


def test_a_recorded_oom_counts_again_unless_the_limit_is_above_it() -> None:
    frame = history(np.full(2 * PER_DAY, 0.1), np.full(2 * PER_DAY, 0.5 * GIB))
    events = pd.DataFrame(
        {
            "timestamp": [START + pd.Timedelta(seconds=300 * (PER_DAY + 10))],
            "namespace": ["test"],
            "pod": ["pod-0"],
            "container": ["main"],
            "reason": ["OOMKilled"],
            "memory": [GIB],
        }
    )
    specs = [fixed_spec(1.0, GIB, "at-limit"), fixed_spec(1.0, 1.5 * GIB, "above")]
    result = run_backtest(frame, events, strategies=specs, execution=SERIAL)
    assert result.summary["at-limit"]["oom_per_container_day"] == pytest.approx(1.0)
    assert result.summary["above"]["oom_per_container_day"] == 0.0


def test_warm_up_is_configurable_and_parsed() -> None:
    assert [parse_duration(text) for text in ("1d", "6h", "90m", "30s", "0")] == [
        86400,
        21600,
        5400,
        30,
        0,
    ]
    with pytest.raises(BacktestInputError):
        parse_duration("soon")
    # a fraction of a second was rounded: 1ms became 0 s, 1500ms 2 s
    assert parse_duration("2000ms") == 2
    with pytest.raises(BacktestInputError, match="'1ms' is below one second"):
        parse_duration("1ms")
    with pytest.raises(BacktestInputError, match="'1500ms' is not a whole number of seconds"):
        parse_duration("1500ms")
    frame = history(np.full(PER_DAY, 0.5))
    result = run_backtest(
        frame,
        strategies="krr",
        execution=SERIAL,
        replay_settings=ReplaySettings(warm_up_seconds=6 * 3600),
    )
    assert result.container_days == pytest.approx(0.75)


def test_dask_local_cluster_gives_the_local_numbers() -> None:
    pytest.importorskip("dask.distributed")
    usage, events = small_fleet()
    strategies = "vpa,krr,autopilot,oracle"
    local = run_backtest(usage, events, strategies, execution=SERIAL)
    on_dask = run_backtest(
        usage,
        events,
        strategies,
        execution=ExecutionSettings(engine="dask", workers=2, block_size=4),
    )
    assert local.to_dict() == on_dask.to_dict()
    assert not math.isnan(on_dask.summary["vpa"]["cpu_relative_slack"])


def test_progress_reports_every_container_replay() -> None:
    calls: list[tuple[int, int]] = []
    frame = history(np.tile(np.full(2 * PER_DAY, 0.5), (3, 1)))
    run_backtest(
        frame,
        strategies="krr,oracle",
        execution=SERIAL,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls[0] == (0, 6) and calls[-1] == (6, 6)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_gaps_do_not_break_the_replay() -> None:
    cpu = np.full(3 * PER_DAY, 0.5)
    cpu[days(3) % 7 == 0] = np.nan  # every 7th window missing
    result = run_backtest(history(cpu), execution=SERIAL)
    for metrics in result.summary.values():
        assert not math.isnan(metrics["cpu_relative_slack"])
    first = 1  # window 0 is one of the gaps: the warm-up counts from the first sample
    expected = np.sum(~np.isnan(cpu[first + PER_DAY :])) / PER_DAY
    assert result.container_days == pytest.approx(expected)


def test_the_forecasting_strategy_plugs_in_by_name() -> None:
    pytest.importorskip("recommender.forecast.strategy")
    usage, events = small_fleet()
    result = run_backtest(usage, events, "vpa,forecast", execution=SERIAL)
    again = run_backtest(usage, events, "vpa,forecast", execution=SERIAL)
    assert result.to_dict() == again.to_dict()
    forecast = result.summary["forecast"]
    assert 0.0 <= forecast["cpu_relative_slack"] < 1.0
    assert forecast["cpu_core_hours_requested"] > 0


def test_a_dask_local_cluster_starts_no_more_workers_than_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distributed = pytest.importorskip("dask.distributed")
    from recommender.backtest.distributed import run_dask

    asked: dict[str, object] = {}

    class Started(Exception):
        """Stops the run once the cluster's size is known."""

    def cluster(**options: object) -> None:
        asked.update(options)
        raise Started

    monkeypatch.setattr(distributed, "LocalCluster", cluster)
    tasks: list = [object(), object()]
    with pytest.raises(Started):
        run_dask(tasks, ExecutionSettings(engine="dask", workers=100_000), lambda _: None)
    assert asked["n_workers"] == 2


def test_forecasting_tasks_are_started_first_and_their_numbers_do_not_move() -> None:
    """The pool starts the longest tasks first; a forecast replay of a smaller block
    still outweighs a VPA replay of a larger one, and the order changes no number."""
    from types import SimpleNamespace

    from recommender.backtest.runner import ReplayTask

    specs = resolve_strategies("vpa,forecast")
    large = SimpleNamespace(size=10, usage=SimpleNamespace(n_windows=100))
    small = SimpleNamespace(size=4, usage=SimpleNamespace(n_windows=100))
    vpa_large = ReplayTask(large, specs[0])  # type: ignore[arg-type]
    forecast_small = ReplayTask(small, specs[1])  # type: ignore[arg-type]
    assert forecast_small.cost > vpa_large.cost
    usage, events = small_fleet()
    one = run_backtest(usage, events, "forecast,vpa", execution=SERIAL)
    other = run_backtest(usage, events, "vpa,forecast", execution=SERIAL)
    assert one.to_dict()["strategies"] == other.to_dict()["strategies"]
