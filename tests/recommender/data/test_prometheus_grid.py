"""Answers placed on the step grid, several series of one container collapsed (no server)."""

from __future__ import annotations

import numpy as np

from recommender.data.prometheus_grid import Grid, SeriesIndex
from recommender.data.prometheus_matrix import Matrix

KEYS = ("namespace", "pod", "container")
NAN = np.nan


def matrix(series: list[tuple[dict[str, str], list[tuple[int, float]]]]) -> Matrix:
    counts = np.array([len(points) for _, points in series], np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    points = [point for _, chosen in series for point in chosen]
    times = np.array([t for t, _ in points], np.int64)
    values = np.array([v for _, v in points])
    return Matrix([labels for labels, _ in series], offsets, times, values)


def container(pod: str, job: str) -> dict[str, str]:
    return {"namespace": "shop", "pod": pod, "container": "app", "job": job}


def two_jobs() -> Matrix:
    """web-0 exported by two jobs that disagree and each miss a point; db-0 once."""
    return matrix(
        [
            (container("web-0", "kubelet"), [(0, 1.0), (300, 5.0)]),
            (container("db-0", "kubelet"), [(0, 7.0), (600, 8.0)]),
            (container("web-0", "cadvisor"), [(300, 4.0), (600, 6.0), (900, NAN)]),
        ]
    )


def test_a_container_exported_twice_is_one_row_holding_the_larger_value() -> None:
    index, grid = SeriesIndex(), Grid(0, 300, 4)
    answer = two_jobs()
    grid.put(index.rows(answer, KEYS), answer)
    assert index.keys()["pod"].tolist() == ["web-0", "db-0"]
    np.testing.assert_array_equal(grid.rows(2), [[1.0, 5.0, 6.0, NAN], [7.0, NAN, 8.0, NAN]])


def test_the_lowest_grid_keeps_the_smaller_value() -> None:
    index, grid = SeriesIndex(), Grid(0, 300, 4, lowest=True)
    answer = two_jobs()
    grid.put(index.rows(answer, KEYS), answer)
    np.testing.assert_array_equal(grid.rows(2), [[1.0, 4.0, 6.0, NAN], [7.0, NAN, 8.0, NAN]])


def test_answers_arriving_apart_combine_and_a_later_nan_keeps_the_number() -> None:
    """The app and init halves of a kube-state-metrics read, or two chunks, on one grid."""
    index, grid = SeriesIndex(), Grid(0, 300, 3)
    first = matrix([(container("web-0", "a"), [(0, 2.0), (300, NAN)])])
    second = matrix([(container("web-0", "b"), [(0, NAN), (300, 3.0), (600, 1.0)])])
    for answer in (first, second):
        grid.put(index.rows(answer, KEYS), answer)
    np.testing.assert_array_equal(grid.rows(1), [[2.0, 3.0, 1.0]])


def test_a_grid_no_answer_reached_holds_nothing_and_small_counts_fit_float32() -> None:
    index, grid = SeriesIndex(), Grid(0, 300, 4, dtype=np.float32)
    index.rows(two_jobs(), KEYS)
    assert not grid.filled and grid.held(2) is None
    grid.put(index.rows(two_jobs(), KEYS), two_jobs())
    held = grid.held(2)
    assert held is not None and held.dtype == np.float32
    np.testing.assert_array_equal(held, [[1.0, 5.0, 6.0, NAN], [7.0, NAN, 8.0, NAN]])


def test_answers_full_on_a_run_of_columns_land_as_point_by_point() -> None:
    """A chunk where every series has every grid point is placed as one block; it must
    combine with what is there exactly as placing each point does, rows in any order."""
    rng = np.random.default_rng(3)
    pods = [f"web-{i}" for i in range(6)]
    values = rng.uniform(0, 10, (6, 3))
    values[1, 2] = NAN
    series = [
        (container(pod, "a"), [(600 + 300 * c, float(values[i, c])) for c in range(3)])
        for i, pod in enumerate(pods)
    ]
    for dtype, lowest, order in (
        (np.float64, False, pods),  # rows in order: combined in place
        (np.float32, False, pods[::-1]),  # rows descending
        (np.float64, True, pods),
    ):
        index, grid = SeriesIndex(), Grid(0, 300, 6, dtype=dtype, lowest=lowest)
        earlier = matrix([(container(pod, "b"), [(900, 5.0)]) for pod in order])
        grid.put(index.rows(earlier, KEYS), earlier)
        for answer in (matrix(series), matrix(series[::2])):  # then rows apart
            grid.put(index.rows(answer, KEYS), answer)
        expected = np.full((6, 6), NAN)
        expected[:, 3] = 5.0
        pick = np.fmin if lowest else np.fmax
        for i, pod in enumerate(pods):
            row = order.index(pod)
            expected[row, 2:5] = pick(expected[row, 2:5], values[i].astype(dtype))
        np.testing.assert_array_equal(grid.rows(6), expected.astype(dtype))
