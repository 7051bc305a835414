"""The margin candidates' replay, window by window (see `recommender.forecast.margins`)."""

from __future__ import annotations

import numpy as np

from recommender.kernels.compiled import compiled


@compiled
def replay(
    values: np.ndarray,
    missing: np.ndarray,
    request: np.ndarray,
    clearly: np.ndarray,
    react_after: int,
    raise_factor: np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """Shortfall windows and reactions per (series, candidate, block) of `request`
    (float32, like `values` (series, blocks, windows), -inf where `missing`). A block
    with fewer than `react_after` windows above request + clearly cannot react: its
    windows above the request are counted. Otherwise, after `react_after` windows in a
    row clearly above (a missing window keeps the run), the request rises to the usage
    x `raise_factor`, if that is higher, and the run starts again."""
    n, candidates, blocks = request.shape
    windows = values.shape[2]
    after = min(max(react_after, 1), windows)
    shortfalls = np.zeros(request.shape)
    reactions = np.zeros(request.shape)
    for i in range(n):
        for b in range(blocks):
            used = values[i, b]
            for c in range(candidates):
                asked = request[i, c, b]
                high = asked + clearly[i]
                short, above = 0, 0
                for w in range(windows):
                    short += used[w] > asked
                    above += used[w] > high
                if above < after:
                    shortfalls[i, c, b] = short
                    continue
                short, run, raised = 0, 0, 0
                for w in range(windows):
                    short += used[w] > asked
                    if used[w] > asked + clearly[i]:
                        run += 1
                    elif not missing[i, b, w]:
                        run = 0
                    if run >= react_after:
                        wanted = used[w] * raise_factor
                        higher = asked if asked >= wanted or asked != asked else wanted
                        raised += higher > asked
                        asked, run = higher, 0
                shortfalls[i, c, b], reactions[i, c, b] = short, raised
    return shortfalls, reactions
