"""The shortfall rate the upstream VPA would run a fleet at: our default risk budget.

Requests are promised never riskier than the upstream VPA's, so the fleet's CPU shortfall
target is what the VPA's own estimator (emulated with upstream's defaults: decayed
exponential histogram, P90 bucket edge x 1.15) would have let through on the same recent
past, times a factor. Each container's first chunks only build its history: that cold
start is the emulation's, not the VPA's (whose updater keeps a young pod's own request).
"""

from __future__ import annotations

import numpy as np

from recommender.vpa.settings import VpaSettings

_UPSTREAM = VpaSettings()
VPA_PERCENTILE = _UPSTREAM.target_percentile
VPA_SAFETY_MARGIN = 1.0 + _UPSTREAM.safety_margin
VPA_MIN_CPU = _UPSTREAM.pod_min_cpu  # cores (one container per pod)
FIRST_BUCKET = _UPSTREAM.cpu_first_bucket  # cores
BUCKET_RATIO = 1.0 + _UPSTREAM.bucket_growth
BUCKETS = 176
HALF_LIFE_SECONDS = _UPSTREAM.cpu_half_life
HISTORY_CHUNKS = 8  # upstream keeps about eight days of weight that matters
MIN_CHUNKS = 3  # the first chunks only build history (the VPA's own cold start is not its norm)


def bucket_edges() -> np.ndarray:
    """Start of each CPU bucket and the end of the last: (BUCKETS + 1,) cores."""
    k = np.arange(BUCKETS + 1, dtype=np.float64)
    return FIRST_BUCKET * (BUCKET_RATIO**k - 1.0) / (BUCKET_RATIO - 1.0)


def vpa_shortfall(cpu: np.ndarray, chunk: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Shortfall windows and judged windows per series under the VPA's estimator: each
    chunk of `chunk` windows of `cpu` (series, windows; `step` seconds each) is judged
    against the target the decayed histogram of the chunks before it gives."""
    n, total = cpu.shape
    chunks = total // chunk
    if chunks < MIN_CHUNKS:
        return np.zeros(n), np.zeros(n)
    values = cpu[:, total - chunks * chunk :]
    # sample counts per (series, chunk, bucket); NaN samples are left out
    edges = bucket_edges()
    bucket = np.clip(
        np.searchsorted(edges, np.nan_to_num(values), side="right") - 1, 0, BUCKETS - 1
    )
    cell = (np.arange(n)[:, None] * chunks + np.arange(values.shape[1])[None, :] // chunk) * BUCKETS
    counts = np.bincount((cell + bucket)[~np.isnan(values)], minlength=n * chunks * BUCKETS)
    histograms = counts.reshape(n, chunks, BUCKETS).astype(np.float64)
    # each series' own first chunks only build its history, wherever it starts
    has_data = histograms.sum(axis=2) > 0
    starts = np.where(has_data.any(axis=1), np.argmax(has_data, axis=1), chunks)
    shortfalls = np.zeros(n)
    judged = np.zeros(n)
    for index in range(MIN_CHUNKS - 1, chunks):
        first = max(0, index - HISTORY_CHUNKS)
        age = (index - np.arange(first, index) - 0.5) * chunk * step
        weights = 2.0 ** (-age / HALF_LIFE_SECONDS)
        weighted = np.einsum("ncb,c->nb", histograms[:, first:index], weights)
        cumulative = np.cumsum(weighted, axis=1)
        total_weight = cumulative[:, -1]
        position = np.argmax(cumulative >= VPA_PERCENTILE * total_weight[:, None], axis=1)
        level = np.maximum(edges[position + 1] * VPA_SAFETY_MARGIN, VPA_MIN_CPU)
        window = values[:, index * chunk : (index + 1) * chunk]
        seen = ~np.isnan(window) & (total_weight[:, None] > 0)
        seen &= (index >= starts + MIN_CHUNKS - 1)[:, None]
        shortfalls += np.sum(seen & (window > level[:, None]), axis=1)
        judged += np.sum(seen, axis=1)
    return shortfalls, judged


def vpa_rate(cpu: np.ndarray, step: int) -> float:
    """The fleet shortfall rate of the VPA's estimator over `cpu` (NaN: too short to judge)."""
    per_day = max(1, round(HALF_LIFE_SECONDS / step))
    seen = int(np.max(np.sum(~np.isnan(cpu), axis=1), initial=0))
    chunk = per_day if seen >= 3 * per_day else max(12, seen // 4)
    shortfalls, judged = vpa_shortfall(cpu, chunk, step)
    if judged.sum() == 0:
        return float("nan")
    return float(shortfalls.sum() / judged.sum())


def parity_target(rate: float, factor: float, floor: float, ceiling: float) -> float:
    """The fleet shortfall target: `factor` x the VPA's `rate`, within [floor, ceiling]."""
    if np.isnan(rate):
        return floor
    return float(np.clip(factor * rate, floor, ceiling))
