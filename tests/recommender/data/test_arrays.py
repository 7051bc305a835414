"""from_long / to_long: the long format onto a regular grid and back, and the snapping rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recommender.data.arrays import UsageArrays, factorize_rows, from_long, infer_step
from recommender.data.schema import validate_usage
from recommender.data.synthetic import demo_fleet

T0 = 1_700_000_100  # a multiple of 300


def long_frame(rows: list[tuple[str, int, float, float]]) -> pd.DataFrame:
    """(pod, UNIX seconds, cpu, memory) rows, validated like any source's output."""
    return validate_usage(
        pd.DataFrame(
            {
                "timestamp": [seconds for _, seconds, _, _ in rows],
                "namespace": "ns",
                "pod": [pod for pod, _, _, _ in rows],
                "container": "c",
                "cpu": [cpu for _, _, cpu, _ in rows],
                "memory": [memory for _, _, _, memory in rows],
            }
        )
    )


def test_on_grid_data_round_trips_exactly() -> None:
    usage, _ = demo_fleet(days=2)
    arrays = from_long(usage)
    assert (arrays.n_series, arrays.n_windows, arrays.step) == (9, 576, 300)
    back = validate_usage(arrays.to_long())
    core = usage.drop(columns=["cpu_request", "memory_request", "cpu_limit", "memory_limit"])
    pd.testing.assert_frame_equal(back, core, check_exact=True)


def test_samples_snap_down_to_their_window() -> None:
    frame = long_frame([("a", T0 + 10, 1.0, 10.0), ("a", T0 + 310, 2.0, 20.0)])
    arrays = from_long(frame, step=300)
    assert arrays.start == T0  # aligned to a multiple of the step, not the first sample
    assert arrays.times.tolist() == [T0, T0 + 300]
    assert arrays.cpu.tolist() == [[1.0, 2.0]]


def test_two_samples_in_one_window_average_cpu_and_keep_peak_memory() -> None:
    frame = long_frame([("a", T0, 1.0, 50.0), ("a", T0 + 100, 3.0, 20.0), ("a", T0 + 300, 5, 7)])
    arrays = from_long(frame, step=300)
    assert arrays.cpu.tolist() == [[2.0, 5.0]]
    assert arrays.memory.tolist() == [[50.0, 7.0]]


def test_gaps_are_nan_and_to_long_drops_them() -> None:
    frame = long_frame([("a", T0, 1.0, 1.0), ("a", T0 + 900, 2.0, 2.0), ("b", T0 + 300, 3, 3)])
    assert from_long(frame).step == 900  # the only gap within a series
    arrays = from_long(frame, step=300)
    assert np.isnan(arrays.cpu).sum() == 5  # a: 2 gaps; b: 3 windows without samples
    back = arrays.to_long()
    assert len(back) == 3
    assert (
        back["timestamp"].tolist()
        == pd.to_datetime([T0, T0 + 900, T0 + 300], unit="s", utc=True).tolist()
    )


def test_cpu_only_series_keep_nan_memory() -> None:
    frame = long_frame([("a", T0, 1.0, np.nan), ("a", T0 + 300, 2.0, np.nan)])
    arrays = from_long(frame)
    assert np.isnan(arrays.memory).all()
    assert arrays.cpu.tolist() == [[1.0, 2.0]]
    assert len(arrays.to_long()) == 2


def test_step_is_inferred_within_series_not_across_them() -> None:
    # Two series every 300 s but 100 s out of phase: the union has 100/200 s gaps.
    rows = [("a", T0 + 300 * i, 1.0, 1.0) for i in range(6)]
    rows += [("b", T0 + 100 + 300 * i, 1.0, 1.0) for i in range(6)]
    assert from_long(long_frame(rows)).step == 300
    seconds = np.array([t for _, t, _, _ in rows])
    series = np.array([0] * 6 + [1] * 6)
    assert infer_step(seconds, series) == 300
    with pytest.raises(ValueError, match="two distinct timestamps"):
        infer_step(np.array([5, 5]))


def test_select_keeps_the_grid_and_validates_shapes() -> None:
    usage, _ = demo_fleet(days=1)
    arrays = from_long(usage)
    part = arrays.select(slice(2, 4))
    assert part.n_series == 2 and part.start == arrays.start
    assert part.keys.iloc[0].tolist() == arrays.keys.iloc[2].tolist()
    with pytest.raises(ValueError):
        UsageArrays(arrays.keys, 0, 300, arrays.cpu, arrays.memory[:, :-1])
    with pytest.raises(ValueError, match="empty"):
        from_long(usage.iloc[:0])


@pytest.mark.parametrize(
    "pods",
    [
        ["b-1", "b-1", "a-1", "a-1", "c-1"],  # each key one run (a history's rows)
        ["b-1", "a-1", "b-1", "c-1", "a-1"],  # keys coming back after others
    ],
)
def test_categorical_keys_are_numbered_as_text_keys_are(pods: list[str]) -> None:
    """Numbers in first-seen order, whether the keys are categorical (grouped in runs
    without hashing, or by pandas) or text."""
    text = pd.DataFrame({"namespace": "shop", "pod": pods, "container": "app"})
    categorical = text.astype("category")
    codes, keys = factorize_rows(categorical, ["namespace", "pod", "container"])
    text_codes, text_keys = factorize_rows(text, ["namespace", "pod", "container"])
    assert codes.tolist() == text_codes.tolist()
    assert keys["pod"].tolist() == text_keys["pod"].tolist() == list(dict.fromkeys(pods))
