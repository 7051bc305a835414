"""The recommend library path: recommendations with what they change, for people.

`advise` runs either model on a canonical history and returns one row per
(namespace, workload, container): the bounds (`recommend_vpa`'s or the forecaster's
columns), an `explanation` for both models, the current requests and pods (from
`current`, e.g. read from the cluster, else from the history's request columns), the
change per resource and its severity (`recommender.savings`). `tailor recommend` prints
these rows; a notebook calls the same function, and `savings_summary` on its result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from recommender.aggregates import vpa_rows
from recommender.forecast.settings import ForecastSettings
from recommender.recommend import fit_vpa_model, recommend_forecast_workloads
from recommender.savings import current_requests, with_changes, with_current
from recommender.vpa.explain import vpa_explanations
from recommender.vpa.settings import VpaSettings

MODELS = ("vpa", "forecast")


def explained_vpa(
    usage: pd.DataFrame,
    events: pd.DataFrame | None = None,
    settings: VpaSettings | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    checked: bool = False,
    count_throttling: bool = True,
) -> pd.DataFrame:
    """`recommend_vpa`'s rows, each with the model's own explanation (and the throttling
    note `recommend_vpa` adds, after it)."""
    model, aggregates = fit_vpa_model(
        usage, events, settings, progress, checked=checked, count_throttling=count_throttling
    )
    rows = vpa_rows(model, aggregates, noted=usage if count_throttling else None)
    said = vpa_explanations(model, aggregates, events)
    notes = rows["explanation"] if "explanation" in rows else pd.Series(np.nan, rows.index)
    rows["explanation"] = [
        f"{own}; {note}" if isinstance(note, str) and note else own
        for own, note in zip(said, notes, strict=True)
    ]
    return rows


def advise(
    usage: pd.DataFrame,
    events: pd.DataFrame | None = None,
    model: str = "vpa",
    *,
    vpa: VpaSettings | None = None,
    forecast: ForecastSettings | None = None,
    step: int | None = None,
    current: pd.DataFrame | None = None,
    checked: bool = False,
    count_throttling: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Recommendations beside current requests, with changes and severity.

    `current`: namespace, workload, container, cpu_current (cores), memory_current
    (bytes), pods; None reads them from the history (`current_requests`). `step`: the
    sample period in seconds when the source knows it (forecast only).
    """
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    if model == "vpa":
        rows = explained_vpa(
            usage,
            events,
            vpa,
            progress,
            checked=checked,
            count_throttling=count_throttling,
        )
    else:
        rows, _ = recommend_forecast_workloads(
            usage, events, forecast, step, checked=checked, count_throttling=count_throttling
        )
    known = current_requests(usage) if current is None else current
    return with_changes(with_current(rows, known))
