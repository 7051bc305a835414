"""Conformal margins: how far above the forecast a request must sit.

The margin of a series is the (1 - target shortfall) quantile of its own recent
one-step forecast errors, measured window by window against the forecast of the
block each window fell in. Quantiles of past out-of-sample errors are what make
the realised shortfall rate land near the target whatever the noise looks like
(the split-conformal argument), without assuming any error distribution.
"""

from __future__ import annotations

import numpy as np

MIN_ERRORS = 12  # fewer past errors than this and a series has no margin of its own


def upper_quantile(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The `level` quantile of each row ignoring NaN, and how many values it came from.

    Uses a partition rather than a sort (the rows can be thousands of windows long)
    and the "higher" rule, so the result is always an observed value: a margin
    is never interpolated below an error that really happened.
    """
    n, length = values.shape
    valid = ~np.isnan(values)
    count = valid.sum(axis=1)
    if length == 0:
        return np.full(n, np.nan), count
    filled = np.where(valid, values, -np.inf)
    # rank from the top: the k-th largest, k = count - ceil(level * (count - 1))
    rank_low = np.ceil(level * np.maximum(count - 1, 0)).astype(np.int64)
    from_top = count - 1 - rank_low  # 0 = the largest
    position = np.clip(length - 1 - from_top, 0, length - 1)
    result = np.full(n, np.nan)
    for kth in np.unique(position[count > 0]):
        rows = np.flatnonzero((position == kth) & (count > 0))
        result[rows] = np.partition(filled[rows], kth, axis=1)[:, kth]
    return result, count


def window_errors(
    windows: np.ndarray, block_forecast: np.ndarray, block_of_window: np.ndarray
) -> np.ndarray:
    """Error of every sample window against its block's one-step forecast: (series, windows)."""
    return windows - block_forecast[:, block_of_window]


def conformal_margin(
    errors: np.ndarray, target_shortfall: float, recent_windows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Margin per series from its last `recent_windows` errors, and the error count used."""
    recent = errors[:, -recent_windows:] if recent_windows < errors.shape[1] else errors
    margin, count = upper_quantile(recent, 1.0 - target_shortfall)
    return np.where(count >= MIN_ERRORS, margin, np.nan), count
