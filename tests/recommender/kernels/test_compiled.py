"""The compiled kernels run where numba has nowhere to cache them (a read-only root without
NUMBA_CACHE_DIR), giving what the cached kernels give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from recommender.forecast.margins import replay_margins
from recommender.forecast.settings import ReactionSettings

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json
import numba.core.caching as caching
caching.CacheImpl._locator_classes = []  # no cache location: numba refuses cache=True
import numpy as np
from recommender.forecast.margins import replay_margins
from recommender.forecast.settings import ReactionSettings
from recommender.kernels.replay import replay
arrays = np.load({inputs!r})
shortfalls, reactions = replay_margins(
    arrays["usage"], arrays["forecast"], arrays["margins"], ReactionSettings(), arrays["scale"]
)
print(json.dumps({{
    "cache": type(replay._cache).__name__,
    "shortfalls": shortfalls.tolist(),
    "reactions": reactions.tolist(),
}}))
"""


def test_a_kernel_without_a_cache_location_compiles_in_process(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    usage = rng.gamma(2.0, 0.5, size=(3, 24, 12))
    forecast = np.nanmean(usage, axis=2) * rng.uniform(0.6, 1.2, size=(3, 24))
    margins = np.sort(rng.gamma(1.0, 0.3, size=(3, 5, 24)), axis=1)
    scale = usage.reshape(3, -1).max(axis=1)
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, usage=usage, forecast=forecast, margins=margins, scale=scale)
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(inputs=str(inputs))],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["cache"] == "NullCache"  # compiled in that process, not cached
    shortfalls, reactions = replay_margins(usage, forecast, margins, ReactionSettings(), scale)
    assert np.array_equal(answer["shortfalls"], shortfalls)
    assert np.array_equal(answer["reactions"], reactions)
    assert reactions.sum() > 0  # the window-by-window path ran
