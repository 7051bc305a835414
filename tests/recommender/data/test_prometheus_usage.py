"""The usage frame cut from the grids a shard of containers at a time (no server)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.data import prometheus_usage
from recommender.data.prometheus_assembly import counter_windows
from recommender.data.prometheus_usage import MEASURED, usage_frame
from recommender.data.schema import USAGE_COLUMNS, validate_usage

STEP = 300
TIMES = 1_700_000_100 + STEP * np.arange(7, dtype=np.int64)
NAMES = ["web-1", "db-0", "web-0", "cache-0", "api-0"]  # unsorted: rows are sorted


def grids(seed: int) -> dict[str, np.ndarray | None]:
    rng = np.random.default_rng(seed)
    shape = (len(NAMES), TIMES.size)
    found: dict[str, np.ndarray | None] = {}
    for name, _ in MEASURED:
        values = rng.uniform(0.1, 4.0, shape) * (2**30 if "memory" in name else 1)
        values[rng.random(shape) < 0.2] = np.nan
        found[name] = values
    found["memory"][3] = np.nan  # type: ignore[index]  # a container without memory
    found["cpu_limit"] = None  # no answer had a point
    return found


def naive(keys: pd.DataFrame, workloads: np.ndarray, given: dict) -> pd.DataFrame:
    """The frame as a long table, row by row: what the cut must equal."""
    rows: list[dict[str, object]] = []
    for i, key in enumerate(keys.to_dict("records")):
        memory = given["memory"][i]
        for j in range(TIMES.size - 1):
            if np.isnan(given["cpu"][i, j + 1]):
                continue
            if np.isnan(memory[j + 1]) and not np.isnan(memory).all():
                continue
            row: dict[str, object] = {"timestamp": pd.Timestamp(int(TIMES[j]), unit="s", tz="UTC")}
            row |= {str(k): v for k, v in key.items()} | {"workload": workloads[i]}
            for name, first in MEASURED:
                grid = given[name]
                row[name] = np.nan if grid is None else grid[i, j + first]
            rows.append(row)
    return validate_usage(pd.DataFrame(rows), "reference")


@pytest.mark.parametrize("shard", [1, 2, 512])
def test_the_frame_cut_by_shards_holds_every_measured_window_sorted(
    monkeypatch: pytest.MonkeyPatch, shard: int
) -> None:
    monkeypatch.setattr(prometheus_usage, "SHARD_ROWS", shard)
    keys = pd.DataFrame({"namespace": "shop", "pod": NAMES, "container": "app"})
    workloads = np.array([name.rsplit("-", 1)[0] for name in NAMES], dtype=object)
    given = grids(seed=shard)
    expected = naive(keys, workloads, given)
    cut = dict(given)
    usage = usage_frame(keys, workloads, TIMES, cut)
    assert not set(cut) & {name for name, _ in MEASURED}  # each grid let go once cut
    assert list(usage.columns) == list(USAGE_COLUMNS)
    assert usage["pod"].tolist() == expected["pod"].tolist()  # sorted by workload, pod
    pd.testing.assert_frame_equal(
        usage.astype({c: str for c in ("namespace", "workload", "pod", "container")}),
        expected.astype({c: str for c in ("namespace", "workload", "pod", "container")}),
        check_exact=True,
    )


def test_counter_windows_by_shards_equal_the_whole_computation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A window is the counter's increase over its samples' elapsed time, unless its floor
    (the lowest sample, -inf for a reset) falls below the counter at its start."""
    counter = np.array([[10.0, 16.0, 13.0, 19.0], [0.0, 3.0, 9.0, 12.0], [5.0, 5.0, 8.0, 9.0]])
    at = np.array([[0.0, 300, 600, 900], [0.0, 300, 600, 600], [0.0, 300, 600, 900]])
    floor = np.array([[10.0, 10, 13, 13], [0, 0, -np.inf, 9], [5, 5, 4, 8]])
    monkeypatch.setattr(prometheus_usage, "SHARD_ROWS", 2)
    nan = np.nan
    np.testing.assert_array_equal(
        counter_windows(counter, at, floor),
        [
            [nan, 6 / 300, nan, 6 / 300],  # 16 -> 13: a decrease
            [nan, 3 / 300, nan, nan],  # a reset counted; no time elapsed
            [nan, 0.0, nan, 1 / 300],  # a sample below the start: a restart overtaken
        ],
    )
