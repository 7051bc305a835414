"""Cutting long series into cold starts: pieces, their names, their events."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.backtest import ReplaySettings, prepare_history
from recommender.backtest.pieces import split_series
from recommender.backtest.settings import BacktestInputError
from recommender.data.schema import empty_events
from tests.recommender.backtest.helpers import PER_DAY, START, STEP, history


def _events(rows: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp": [pd.Timestamp(when) for when, _ in rows],
            "namespace": "test",
            "workload": [pod for _, pod in rows],
            "pod": [pod for _, pod in rows],
            "container": "main",
            "reason": "OOMKilled",
            "memory": 1.0,
        }
    )


def test_each_day_becomes_a_container_starting_with_the_others() -> None:
    usage = history(np.tile(np.arange(3 * PER_DAY, dtype=float), (2, 1)), pods=["a", "b"])
    usage.loc[usage.pod == "b", "timestamp"] += pd.Timedelta(hours=5)  # starts later
    pieces, _ = split_series(usage, empty_events(), 86_400)
    assert sorted(pieces.pod.unique()) == ["a-p0", "a-p1", "a-p2", "b-p0", "b-p1", "b-p2"]
    assert (pieces.workload == pieces.pod).all()
    starts = pieces.groupby("pod").timestamp.min()
    assert (starts == START).all()
    assert (pieces.groupby("pod").size() == PER_DAY).all()
    # each piece keeps its own day of usage, in order
    day_two = pieces[pieces.pod == "a-p2"].sort_values("timestamp")
    assert day_two.cpu.tolist() == list(np.arange(2 * PER_DAY, 3 * PER_DAY, dtype=float))


def test_pieces_replay_on_the_sampling_step_even_out_of_phase() -> None:
    usage = history(np.full((2, 2 * PER_DAY), 0.5), pods=["a", "b"])
    usage.loc[usage.pod == "b", "timestamp"] += pd.Timedelta(seconds=7)
    # a clock that drifts: day two of `a` is 3 s late against day one
    late = (usage.pod == "a") & (usage.timestamp >= START + pd.Timedelta(days=1))
    usage.loc[late, "timestamp"] += pd.Timedelta(seconds=3)
    pieces, _ = split_series(usage, empty_events(), 86_400)
    replay = prepare_history(pieces, None, ReplaySettings(warm_up_seconds=6 * 3600))
    assert replay.usage.step == STEP
    assert replay.usage.cpu.shape == (4, PER_DAY)


def test_events_move_with_the_piece_they_fall_in() -> None:
    usage = history(np.full((1, 2 * PER_DAY), 0.5), pods=["a"])
    events = _events(
        [
            ("2024-01-01T03:00:00Z", "a"),  # day one
            ("2024-01-02T04:00:00Z", "a"),  # day two, 4 h in
            ("2023-12-31T00:00:00Z", "a"),  # before any usage: dropped
            ("2024-01-01T03:00:00Z", "ghost"),  # no usage at all: dropped
        ]
    )
    _, moved = split_series(usage, events, 86_400)
    assert moved.pod.tolist() == ["a-p0", "a-p1"]
    assert moved.timestamp.tolist() == [
        START + pd.Timedelta(hours=3),
        START + pd.Timedelta(hours=4),
    ]
    assert "first" not in moved.columns


def test_a_span_that_is_not_positive_is_refused() -> None:
    usage = history(np.full(PER_DAY, 0.5))
    with pytest.raises(BacktestInputError, match="positive"):
        split_series(usage, empty_events(), 0)
