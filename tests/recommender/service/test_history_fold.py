"""How the history cache folds a read of what is new into what it holds (no server)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.data.columnar import shared_categories
from recommender.data.prometheus_usage import with_spare_rows
from recommender.data.schema import KEY_LABELS
from recommender.data.timestamps import unix_seconds
from recommender.service.history_cache import HistoryCache, _one_workload
from recommender.service.history_cache_append import appended, block_of
from recommender.service.history_cache_fold import fold


def frame(rows: list[tuple[str, str, str, int]]) -> pd.DataFrame:
    """Usage rows (workload, pod, container, minute), keys one shared categorical."""
    usage = pd.DataFrame(rows, columns=["workload", "pod", "container", "minute"])
    usage.insert(0, "namespace", "shop")
    usage["timestamp"] = pd.to_datetime(usage.pop("minute") * 60, unit="s", utc=True)
    usage["cpu"] = 0.5
    dtype = shared_categories(usage[name] for name in KEY_LABELS)
    return usage.astype(dict.fromkeys(KEY_LABELS, dtype))


def test_a_pod_named_after_itself_in_one_read_takes_its_controllers_name() -> None:
    usage = frame(
        [
            ("web", "web-1", "app", 0),
            ("web-1", "web-1", "app", 5),  # a read whose range held no owner sample
            ("bare", "bare", "app", 0),  # a pod without a controller keeps its own name
            ("db", "db-0", "app", 0),
        ]
    )
    folded = _one_workload(usage)
    assert folded["workload"].astype(str).tolist() == ["web", "web", "bare", "db"]
    assert folded["workload"].dtype == usage["workload"].dtype


def test_a_series_whose_controller_changed_takes_the_last_one() -> None:
    usage = frame([("old", "web-1", "app", 0), ("new", "web-1", "app", 5)])
    assert _one_workload(usage)["workload"].astype(str).tolist() == ["new", "new"]


def test_the_fold_keeps_old_rows_before_the_cut_and_new_ones_from_it_in_order() -> None:
    old = frame([("web", "web-1", "app", m) for m in (0, 5, 10)] + [("db", "db-0", "app", 5)])
    new = frame([("web", "web-1", "app", m) for m in (5, 10, 15)] + [("api", "api-0", "x", 15)])
    joined = HistoryCache()._joined(old, new, start=5 * 60, cut=10 * 60)
    shown = list(zip(joined["pod"].astype(str), joined["timestamp"].dt.minute, strict=True))
    assert shown == [("api-0", 15), ("db-0", 5), ("web-1", 5), ("web-1", 10), ("web-1", 15)]
    assert joined["pod"].dtype == joined["workload"].dtype  # one set of names, the union
    assert set(joined["pod"].cat.categories) >= {"api-0", "db-0", "web-1"}


def test_the_fold_carries_every_column_of_the_rows_it_keeps() -> None:
    """Each column's values travel with their row, categorical keys over the union of
    both reads' names, float columns as floats, as a sort of the joined reads gives."""
    old = frame([("web", "web-1", "app", m) for m in (0, 5, 10)] + [("db", "db-0", "app", 5)])
    new = frame([("web", "web-1", "app", m) for m in (10, 15)] + [("api", "api-0", "x", 15)])
    old["cpu"], new["cpu"] = [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0]
    old["memory"], new["memory"] = [10.0, 20.0, 30.0, float("nan")], [50.0, 60.0, 70.0]
    joined = HistoryCache()._joined(old, new, start=0, cut=10 * 60)
    kept = old[old["timestamp"].dt.minute < 10]
    expected = pd.concat([kept.astype(str), new.astype(str)], ignore_index=True)
    expected = expected.sort_values(["pod", "timestamp"], kind="stable", ignore_index=True)
    assert joined["cpu"].tolist() == [7.0, 4.0, 1.0, 2.0, 5.0, 6.0]
    assert joined["memory"].dtype == "float64" and joined["memory"].isna().sum() == 1
    pd.testing.assert_frame_equal(
        joined.astype(str), expected.astype(str)[list(joined.columns)], check_dtype=False
    )
    assert list(joined.columns) == list(old.columns)


def history(
    series: list[tuple[str, str, str]], minutes: range, seed: int, spare: bool = True
) -> pd.DataFrame:
    """Every series of `series` at each minute of `minutes`, floats in one block (with
    spare rows, as the Prometheus source builds it, unless not `spare`)."""
    rows = [(w, p, c, m) for w, p, c in series for m in minutes]
    usage = frame(rows).drop(columns="cpu")
    values = np.random.default_rng(seed).random((2, len(usage)))
    values[1, ::7] = np.nan
    block = with_spare_rows(2, len(usage)) if spare else np.empty((2, len(usage)))
    block[:] = values
    floats = pd.DataFrame(block.T, columns=["cpu", "memory"], copy=False)
    for at, name in enumerate(usage.columns):
        floats.insert(at, name, usage[name])
    return floats


def kept_rows(usage: pd.DataFrame, first: int, last: int) -> np.ndarray:
    minutes = unix_seconds(usage["timestamp"]) // 60
    return np.flatnonzero((minutes >= first) & (minutes < last))


FOREVER = 10**9  # minutes


def test_folding_in_place_gives_the_copying_folds_frame_in_the_same_memory() -> None:
    # each read sorted by series, as the source gives them; one series gone, one new
    old = history([("db", "db-0", "app"), ("db", "db-0", "side"), ("web", "web-1", "app")],
                  range(0, 60, 5), seed=1)  # fmt: skip
    new = history([("api", "api-0", "x"), ("db", "db-0", "side"), ("web", "web-1", "app")],
                  range(40, 75, 5), seed=2)  # fmt: skip
    expected = fold([(old, kept_rows(old, 10, 50)), (new, kept_rows(new, 50, FOREVER))])
    block = block_of(old, ["cpu", "memory"])
    assert block is not None
    joined = appended(old, (10 * 60, 50 * 60), new, (50 * 60, FOREVER * 60), block)
    assert joined is not None
    pd.testing.assert_frame_equal(joined, expected)
    assert np.shares_memory(joined["cpu"].to_numpy(), block)  # no second history


def test_a_fold_that_cannot_be_done_in_place_says_so() -> None:
    old = history([("web", "web-1", "app")], range(0, 60, 5), seed=1, spare=False)
    new = history([("web", "web-1", "app")], range(40, 75, 5), seed=2)
    block = block_of(old, ["cpu", "memory"])
    assert block is not None
    # more rows than the block holds
    assert appended(old, (0, 60 * 60), new, (60 * 60, FOREVER * 60), block) is None
    # a series' new rows from before its kept old ones end: not a fold of what is new
    assert appended(old, (50 * 60, 60 * 60), new, (40 * 60, 45 * 60), block) is None
    other = history([("web", "web-1", "app")], range(0, 60, 5), seed=3)
    elsewhere = block_of(other, ["cpu", "memory"])
    assert elsewhere is not None  # not the block the old frame's floats live in
    assert appended(old, (0, 30 * 60), new, (60 * 60, FOREVER * 60), elsewhere) is None
    # within the block's rows, the same fold is done in place
    assert appended(old, (15 * 60, 60 * 60), new, (60 * 60, FOREVER * 60), block) is not None


@pytest.mark.parametrize("seed", range(12))
def test_folding_in_place_moves_every_run_where_the_copying_fold_puts_it(seed: int) -> None:
    """Series dropped, kept and new in every mix, so runs move left and right."""
    rng = np.random.default_rng(seed)
    names = [("db", "db-0", "app"), ("db", "db-1", "app"), ("web", "web-1", "app"),
             ("web", "web-1", "side"), ("x", "x-0", "app"), ("y", "y-9", "app")]  # fmt: skip
    old_series = [s for s in names if rng.random() < 0.7] or names[:1]
    new_series = [s for s in names if rng.random() < 0.7] or names[-1:]
    start, cut = int(rng.integers(0, 30)), int(rng.integers(35, 60))
    old = history(old_series, range(0, 60, 5), seed=seed)
    new = history(new_series, range(cut - 10, 80, 5), seed=seed + 100)
    expected = fold([(old, kept_rows(old, start, cut)), (new, kept_rows(new, cut, FOREVER))])
    block = block_of(old, ["cpu", "memory"])
    assert block is not None
    joined = appended(old, (start * 60, cut * 60), new, (cut * 60, FOREVER * 60), block)
    assert joined is not None
    pd.testing.assert_frame_equal(joined, expected)
