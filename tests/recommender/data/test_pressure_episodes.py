"""Sustained memory pressure read back from a history: episodes as OOM-like events the
models bump the memory for, as they do after a kill."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from recommender.advice import explained_vpa
from recommender.data.ooms import oom_kills
from recommender.data.prometheus_assembly import pressure_episodes
from recommender.data.schema import validate_events
from recommender.recommend import recommend_vpa
from tailor.memory_pressure import MEMORY_PRESSURE, PressureRule

Mi = 2**20
RULE = PressureRule(stalled_share=0.10, window=timedelta(seconds=60))  # 2 windows of 30 s
TIMES = np.arange(8, dtype=np.int64) * 30 + 1_700_000_000
KEYS = pd.DataFrame({"namespace": ["shop", "shop"], "pod": ["a", "b"], "container": ["app", "app"]})


def test_an_episode_starts_where_the_windows_spanning_the_rule_first_average_its_threshold() -> (
    None
):
    nan = np.nan
    stalled = np.array(
        [
            # 0.05 + 0.20 averages 0.125 at column 3: onset; on, then off, then on again
            [nan, 0.0, 0.05, 0.20, 0.30, 0.0, 0.0, 0.5],
            # a missing reading is no zero: 0.3 beside it is not two windows' average
            [nan, 0.3, nan, 0.3, nan, 0.09, 0.09, 0.0],
        ]
    )
    memory = np.array(
        [
            [nan, 200, 220, 240, 250, 150, 150, 245],
            [nan, 230, 230, 230, 230, 230, 230, 230],
        ]
    ) * float(Mi)
    found = pressure_episodes(KEYS, stalled, memory, TIMES, RULE)
    assert found["pod"].tolist() == ["a", "a"]
    assert found["time"].tolist() == [TIMES[3], TIMES[7]]
    assert found["memory"].tolist() == [240.0 * Mi, 245.0 * Mi]  # the peak over the span


def test_a_history_shorter_than_the_window_or_with_a_longer_step_still_reads() -> None:
    stalled = np.array([[np.nan, 0.5], [np.nan, 0.01]])
    memory = np.full((2, 2), 230.0 * Mi)
    assert pressure_episodes(KEYS, stalled, memory, TIMES[:2], RULE).empty
    hourly = np.array([0, 3600, 7200], dtype=np.int64)  # one step spans the whole window
    found = pressure_episodes(
        KEYS, np.array([[0, 0.2, 0.2], [0, 0, 0]]), np.full((2, 3), 1.0 * Mi), hourly, RULE
    )
    assert found["time"].tolist() == [3600]


def _usage(memory: float) -> pd.DataFrame:
    stamps = pd.date_range("2024-05-01", periods=48, freq="30min", tz="UTC")
    return pd.DataFrame(
        {
            "timestamp": stamps,
            "namespace": "shop",
            "pod": "a",
            "container": "app",
            "cpu": 0.1,
            "memory": memory,
        }
    )


def test_the_models_bump_the_memory_for_an_episode_as_for_an_oom_kill() -> None:
    usage = _usage(200.0 * Mi)
    at = usage["timestamp"].iloc[-4]

    def events(reason: str) -> pd.DataFrame:
        frame = pd.DataFrame(
            [{"timestamp": at, "namespace": "shop", "pod": "a", "container": "app",
              "reason": reason, "memory": 240.0 * Mi}]
        )  # fmt: skip
        return validate_events(frame)

    keys = usage[["namespace", "pod", "container"]].drop_duplicates().reset_index(drop=True)
    assert len(oom_kills(events(MEMORY_PRESSURE), keys)) == 1
    plain = recommend_vpa(usage)
    pressed = recommend_vpa(usage, events(MEMORY_PRESSURE))
    killed = recommend_vpa(usage, events("OOMKilled"))
    [without], [with_pressure], [with_kill] = (
        r["memory_target"].tolist() for r in (plain, pressed, killed)
    )
    assert with_pressure == with_kill  # the same memory as a kill at that working set
    assert with_pressure > without
    assert with_pressure >= 340 * Mi  # 240Mi + 100 MiB, with the model's margin on top
    [said] = explained_vpa(usage, events(MEMORY_PRESSURE))["explanation"].tolist()
    assert "1 memory-pressure episode(s) (as kills) raised memory" in said


def test_an_events_file_may_hold_pressure_episodes_but_no_unknown_reason() -> None:
    row = {"timestamp": "2024-05-01T00:00:00Z", "namespace": "shop", "pod": "a",
           "container": "app", "memory": 1.0}  # fmt: skip
    assert len(validate_events(pd.DataFrame([{**row, "reason": MEMORY_PRESSURE}]))) == 1
    with pytest.raises(ValueError, match="expected OOMKilled, Evicted, MemoryPressure"):
        validate_events(pd.DataFrame([{**row, "reason": "Pressure"}]))
