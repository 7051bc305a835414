"""Quantiles of many rows at once, NaN-aware, always returning observed values.

Margins must never sit below an error that really happened, so every quantile
here uses the "higher" rule (numpy's method="higher"): the value at rank
ceil(level x (count - 1)) among a row's non-missing values.
"""

from __future__ import annotations

import warnings

import numpy as np

PARTITION_POINTS = 16  # more distinct ranks than this and a sort is faster


def _ranks(count: np.ndarray, levels: tuple[float, ...]) -> np.ndarray:
    """Index of each level's value among `count` sorted values ("higher" rule)."""
    scaled = np.asarray(levels)[None, :] * np.maximum(count - 1, 0)[:, None]
    return np.ceil(scaled).astype(np.int64)


def gapless_max(values: np.ndarray, axis: int = 1) -> np.ndarray:
    """Largest value along `axis`, gaps (NaN) ignored; -inf where there is none."""
    return np.max(np.where(np.isnan(values), -np.inf, values), axis=axis, initial=-np.inf)


def gapless_mean(values: np.ndarray, axis: int) -> np.ndarray:
    """Mean along `axis`, gaps (NaN) ignored; NaN where there is none (numpy warns of
    an empty slice, which here is only a series without samples)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def error_quantiles(errors: np.ndarray, levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles of each row, NaN ignored, and the counts: one level by a partition (linear
    time), several by a sort."""
    n, length = errors.shape
    missing = np.isnan(errors)
    count = length - np.sum(missing, axis=1)
    if length == 0:
        return np.full((n, len(levels)), np.nan), count
    rank = np.clip(_ranks(count, levels), 0, length - 1)
    # one level counts from the top with missing values at the bottom: high levels then
    # need only a few distinct partition points however many samples are missing
    from_top = np.minimum(length - count + rank[:, 0], length - 1)
    if len(levels) == 1 and levels[0] == 1.0:
        picked = gapless_max(errors)[:, None]
    elif len(levels) == 1 and (points := np.unique(from_top)).size <= PARTITION_POINTS:
        parted = np.partition(np.where(missing, -np.inf, errors), points, axis=1)
        picked = np.take_along_axis(parted, from_top[:, None], axis=1)
    else:
        ordered = np.sort(np.where(missing, np.inf, errors), axis=1)
        picked = np.take_along_axis(ordered, rank, axis=1)
    return np.where(count[:, None] > 0, picked, np.nan), count


def grouped_quantiles(
    errors: np.ndarray, groups: np.ndarray, n_groups: int, levels: tuple[float, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """`error_quantiles` of each row's values per group in [0, n_groups), with one sort
    per row: (series, n_groups, levels) quantiles and (series, n_groups) counts."""
    n, length = errors.shape
    seen = ~np.isnan(errors)
    count = np.stack([np.sum(seen & (groups == k), axis=1) for k in range(n_groups)], axis=1)
    if length == 0:
        return np.full((n, n_groups, len(levels)), np.nan), count
    finite = np.where(seen, errors, 0.0)
    spread = np.abs(finite).max(axis=1, keepdims=True) * 2.0 + 1.0
    # values of group k land in [k * spread, (k + 1) * spread) after the shift
    shifted = np.where(seen, errors + spread * (groups + 0.5), np.inf)
    ordered = np.sort(shifted, axis=1)
    offsets = np.concatenate([np.zeros((n, 1), dtype=np.int64), np.cumsum(count, axis=1)], axis=1)
    result = np.full((n, n_groups, len(levels)), np.nan)
    for k in range(n_groups):
        rank = offsets[:, k, None] + _ranks(count[:, k], levels)
        picked = np.take_along_axis(ordered, np.clip(rank, 0, length - 1), axis=1)
        result[:, k] = np.where(count[:, k, None] > 0, picked - spread * (k + 0.5), np.nan)
    return result, count
