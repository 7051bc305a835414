"""What the backtest says about the history it is given: events it ignores, and
sample periods it cannot replay together (through the CLI, on hand-built files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from recommender.backtest import prepare_history
from tests.cli_text import plain
from tests.recommender.backtest.helpers import PER_DAY, history, write_usage
from tests.recommender.backtest.test_cli_and_report import invoke


def test_kills_of_no_container_are_noted(tmp_path: Path) -> None:
    """As `tailor recommend` notes them; the backtest ignored them without a word."""
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    events = tmp_path / "events.csv"
    row = "2024-01-01T06:00:00Z,{},pod-0,main,OOMKilled,1e9\n"
    header = "timestamp,namespace,pod,container,reason,memory\n"
    events.write_text(header + row.format("tset") + row.format("test"))
    args = ["--input", str(usage), "--events", str(events), "--strategies", "vpa"]
    code, output = invoke(*args, "--no-progress")
    assert code == 0, output
    assert "note: 1 of 2 OOM kills in the events file match no container" in plain(output)
    events.write_text(header + row.format("test"))
    assert "note" not in invoke(*args, "--no-progress")[1]


def test_events_outside_the_replayed_history_are_noted(tmp_path: Path) -> None:
    """A kill of a known container a year before its history changes nothing: say so."""
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    events = tmp_path / "events.csv"
    header = "timestamp,namespace,pod,container,reason,memory\n"
    rows = ["2023-01-01T06:00:00Z", "2024-01-01T06:00:00Z", "2025-06-01T06:00:00Z"]
    events.write_text(header + "".join(f"{t},test,pod-0,main,OOMKilled,1e9\n" for t in rows))
    args = ["--input", str(usage), "--events", str(events), "--strategies", "vpa"]
    code, output = invoke(*args, "--no-progress")
    assert code == 0, output
    assert "note: 2 events of the history's containers fall before its first or after its last" in (
        plain(output)
    )
    assert "match no container" not in plain(output)


def test_an_event_outside_its_containers_samples_is_ignored_even_inside_the_grid() -> None:
    """Another series spanning that time must not lengthen the container's life."""
    both = np.full((2, 3 * PER_DAY), 0.5)
    both[0, 2 * PER_DAY :] = np.nan  # pod-0 ends after 2 days, pod-1 runs on
    usage = history(both)
    after_end = usage["timestamp"].min() + pd.Timedelta(days=2, hours=8)
    events = pd.DataFrame(
        [{"timestamp": after_end, "namespace": "test", "pod": "pod-0", "container": "main",
          "reason": "OOMKilled", "memory": 1e9}]
    )  # fmt: skip
    replay = prepare_history(usage, events)
    assert (replay.ignored_events, replay.events_outside) == (1, 1)
    assert replay.last_window[0] == prepare_history(usage).last_window[0] == 2 * PER_DAY - 1


def test_series_sampled_at_another_period_are_refused(tmp_path: Path) -> None:
    """On the finer grid most of a coarser series' windows were gaps: its container-days,
    core-hours and OOM rate came out a fifth of the truth without a word."""
    fine = history(np.full(2 * PER_DAY, 0.5))
    coarse = fine.iloc[::5].assign(pod="coarse", workload="coarse")
    usage = write_usage(tmp_path, pd.concat([fine, fine.assign(pod="b", workload="b"), coarse]))
    code, output = invoke("--input", str(usage), "--strategies", "vpa", "--no-progress")
    assert code == 2
    assert (
        "1 series are sampled at another period than the rest (300 s), e.g. test/coarse/main"
        in (plain(output))
    )
    assert "every 1500 s" in plain(output)
