"""Shape classes: containers that look alike lend each other their error history.

A margin is a quantile of a container's own recent errors; with a few hours of
history (a new deployment, or the one-day Google 2011 series) there are too few
errors per state for a high quantile. Containers are grouped by the shape of
their usage (burstiness, persistence, daily cycle, on/off) with k-means, and a
state with little history of its own borrows the pooled errors of its class,
scaled to the container's own peak, weighted by how little it has seen (an
empirical-Bayes blend: own errors count fully once there are `PRIOR_ERRORS`).
"""

from __future__ import annotations

import numpy as np

from recommender.forecast.quantiles import error_quantiles
from recommender.forecast.shape import ShapeReport

MIN_CLASS_SIZE = 8  # fewer containers than this per class and one class serves all
MAX_CLASSES = 6
PRIOR_ERRORS = 24  # own errors that outweigh the class's pooled ones
POOL_LIMIT = 200_000  # pooled errors kept per (class, state): enough for a quantile


def shape_features(shape: ShapeReport) -> np.ndarray:
    """What a class is made of: (series, 5) finite features."""
    return np.column_stack(
        [
            np.log1p(np.clip(np.nan_to_num(shape.burstiness, posinf=1e3), 0.0, 1e3)),
            np.nan_to_num(shape.persistence),
            np.nan_to_num(shape.daily_acf),
            shape.batch.astype(np.float64),
            np.minimum(shape.history_days, 7.0) / 7.0,
        ]
    )


def shape_classes(shape: ShapeReport) -> np.ndarray:
    """Class label per series (k-means on standardised shape features), int64 (series,)."""
    features = shape_features(shape)
    n = features.shape[0]
    k = min(MAX_CLASSES, n // MIN_CLASS_SIZE)
    if k < 2:
        return np.zeros(n, dtype=np.int64)
    # imported here: scikit-learn takes seconds to import, and only a fleet of 16
    # containers or more is clustered (every other command, and `tailor --help`, skips it)
    from sklearn.cluster import KMeans
    from sklearn.preprocessing import StandardScaler

    scaled = StandardScaler().fit_transform(features)
    model = KMeans(n_clusters=k, n_init=3, random_state=0).fit(scaled)
    return np.asarray(model.labels_, dtype=np.int64)


def pooled_quantiles(
    relative_errors: np.ndarray,
    groups: np.ndarray,
    classes: np.ndarray,
    n_groups: int,
    levels: tuple[float, ...],
) -> np.ndarray:
    """Quantiles of the errors (relative to each series' peak) pooled per (class, group).

    relative_errors, groups: (series, values); returns (classes, groups, levels),
    NaN where a pool is empty.
    """

    n_classes = int(classes.max(initial=0)) + 1
    out = np.full((n_classes, n_groups, len(levels)), np.nan)
    for c in range(n_classes):
        rows = classes == c
        for k in range(n_groups):
            values = relative_errors[rows][groups[rows] == k]
            values = values[~np.isnan(values)]
            if values.size == 0:
                continue
            stride = max(1, values.size // POOL_LIMIT)
            out[c, k] = error_quantiles(values[None, ::stride], levels)[0][0]
    return out


def blend(
    own: np.ndarray, count: np.ndarray, pooled: np.ndarray, classes: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """Own candidates (series, groups, levels) shrunk towards the class's pooled ones."""
    borrowed = pooled[classes] * scale[:, None, None]
    weight = (count / (count + PRIOR_ERRORS))[:, :, None]
    mixed = weight * np.nan_to_num(own) + (1.0 - weight) * borrowed
    mixed = np.where(np.isnan(borrowed), own, mixed)
    return np.where(count[:, :, None] == 0, borrowed, mixed)
