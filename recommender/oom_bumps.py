"""OOM bumps per container: what a VPA's containerPolicies say about memory after a kill.

Upstream's AEP-8026 lets a VPA set `oomBumpUpRatio` and `oomMinBumpUp` for its
containers, overriding the recommender's flags. Both models take them as one table,
keyed like their recommendations (namespace, workload, container), with NaN where
the model's own setting applies; this module checks that table and spreads it over
the model's series.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data.arrays import AGGREGATE_COLUMNS

OOM_BUMP_COLUMNS = ("oom_bump_ratio", "oom_min_bump")


class OomBumpError(ValueError):
    """A bump table the models cannot use: missing columns, bad values, a key twice."""


def checked_oom_bumps(bumps: pd.DataFrame) -> pd.DataFrame:
    """The table with its keys as str and its values as float, or OomBumpError."""
    missing = [c for c in (*AGGREGATE_COLUMNS, *OOM_BUMP_COLUMNS) if c not in bumps]
    if missing:
        raise OomBumpError(f"OOM bumps lack the column(s) {', '.join(missing)}")
    table = bumps.loc[:, [*AGGREGATE_COLUMNS, *OOM_BUMP_COLUMNS]].copy()
    table[list(AGGREGATE_COLUMNS)] = table[list(AGGREGATE_COLUMNS)].astype(str)
    try:
        table[list(OOM_BUMP_COLUMNS)] = table[list(OOM_BUMP_COLUMNS)].astype(np.float64)
    except (TypeError, ValueError) as error:
        raise OomBumpError(f"OOM bumps must be numbers: {error}") from None
    ratio, min_bump = table["oom_bump_ratio"], table["oom_min_bump"]
    if ((ratio < 1) | np.isinf(ratio)).any():
        raise OomBumpError("oom_bump_ratio must be a finite number of at least 1 (NaN: default)")
    if ((min_bump < 0) | np.isinf(min_bump)).any():
        raise OomBumpError("oom_min_bump must be a finite number of bytes >= 0 (NaN: default)")
    twice = table.duplicated(list(AGGREGATE_COLUMNS), keep=False)
    if twice.any():
        first = table.loc[twice, list(AGGREGATE_COLUMNS)].iloc[0].tolist()
        raise OomBumpError(f"OOM bumps name {'/'.join(first)} more than once")
    return table


def series_oom_bumps(
    keys: pd.DataFrame, bumps: pd.DataFrame | None
) -> tuple[np.ndarray, np.ndarray]:
    """(ratio, minimum bytes) for each row of `keys` (a model's series), NaN = default."""
    if bumps is None or bumps.empty:
        return np.full(len(keys), np.nan), np.full(len(keys), np.nan)
    table = checked_oom_bumps(bumps)
    joined = (
        keys.loc[:, list(AGGREGATE_COLUMNS)]
        .astype(str)
        .merge(table, on=list(AGGREGATE_COLUMNS), how="left", sort=False)
    )
    return (
        joined["oom_bump_ratio"].to_numpy(dtype=np.float64),
        joined["oom_min_bump"].to_numpy(dtype=np.float64),
    )
