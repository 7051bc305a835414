"""History with categorical keys (as the Prometheus source returns it) gives the same
recommendations as with text keys, past the 127 names pandas' smallest codes hold."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data.columnar import shared_categories, with_keys
from recommender.data.schema import KEY_LABELS, empty_events, validate_usage
from recommender.recommend import recommend_forecast_workloads, recommend_vpa

STEP = 300


def _fleet(workloads: int) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    times = pd.date_range("2026-01-01", periods=2 * 288, freq="5min", tz="UTC")
    names = [f"svc-{i:03d}" for i in range(workloads)]
    frame = pd.DataFrame(
        {
            "timestamp": np.tile(times, workloads),
            "namespace": "shop",
            "workload": np.repeat(names, times.size),
            "pod": np.repeat([f"{n}-abc12-x" for n in names], times.size),
            "container": "app",
            "cpu": rng.gamma(2.0, 0.1, workloads * times.size),
            "memory": rng.uniform(1e8, 2e8, workloads * times.size),
            "cpu_request": 0.5,
            "memory_request": 2e8,
        }
    )
    return validate_usage(frame)


def test_both_models_answer_alike_for_categorical_and_text_keys() -> None:
    text = _fleet(150)
    categorical = with_keys(text, shared_categories(text[name] for name in KEY_LABELS))
    assert isinstance(categorical["workload"].dtype, pd.CategoricalDtype)
    as_text = {name: str for name in ("namespace", "workload", "container")}
    for run in (
        lambda usage: recommend_forecast_workloads(usage, empty_events(), None, STEP, checked=True)[
            0
        ],
        lambda usage: recommend_vpa(usage, checked=True),
    ):
        expected, found = run(text), run(categorical)
        assert len(found) == 150
        pd.testing.assert_frame_equal(
            found.astype(as_text), expected.astype(as_text), check_dtype=False
        )
