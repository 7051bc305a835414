"""The memory sentence of `reasons`: each series read at its own state peaks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from recommender.explanations import reasons
from recommender.forecast.api import plan_forecast
from recommender.forecast.settings import ForecastSettings
from tests.recommender.forecast import synthetic as syn

MIB = 2.0**20
SETTINGS = ForecastSettings()


def test_each_series_is_explained_by_its_own_state_peaks_capped_at_its_peak() -> None:
    cpu = [syn.daily(1.0), syn.noise(1.0), syn.daily(1.0)]
    planned = plan_forecast(syn.fleet(cpu))
    (rows, plan), *_ = planned.plans
    nan = np.nan
    memory = replace(
        plan.memory,
        peak=np.array([1000.0, 2000.0, 3000.0]) * MIB,
        # series 1's part-busy state saw more than its overall recent peak: said at the peak
        state_peak=np.array([[100, 200, nan, nan], [300, 4000, nan, nan], [nan, nan, nan, nan]])
        * MIB,
        by_state=np.array([True, True, True]),
    )
    said = reasons(replace(plan, memory=memory), planned.ooms.select(rows), SETTINGS)
    memory_said = [text.partition(". memory: ")[2] for text in said["explanation"]]
    said_states = [text.partition(") +")[0] for text in memory_said[:2]]
    # a state never seen is sized at the overall peak (fmin takes it)
    assert said_states == [
        "sized per CPU state (idle 100 MiB, part-busy 200 MiB, busy 1000 MiB, "
        "idle after busy 1000 MiB",
        "sized per CPU state (idle 300 MiB, part-busy 1.95 GiB, busy 1.95 GiB, "
        "idle after busy 1.95 GiB",
    ]
    # no state lower than the peak: the peak itself
    assert memory_said[2].startswith("covers the peak of the remembered history 2.93 GiB")
