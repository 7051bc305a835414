"""CPU demand hidden by a CPU limit: usage plus the time CFS throttling held back.

A container at its CPU limit uses no more than the limit, whatever it wanted, so
its usage understates its need, and a recommender sizing on usage alone (as the
upstream VPA does, its issues 3091 and 4230) keeps a throttled container where
it is. The kernel counts, per CPU, how long the container's runnable threads
waited for the next quota period (`container_cpu_cfs_throttled_seconds_total`):
each of those seconds is a second of one CPU the container would have run on.
So the demand of a window is its usage plus its throttled CPU-seconds per second.
It can overstate a little (a thread released at the period's end might have
finished earlier), which errs toward the side that does not throttle.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from recommender.data.schema import THROTTLED_COLUMN

THROTTLED_SHARE_NOTED = 0.001
"""Windows held back by less than this many cores are not counted as throttled."""


def has_throttling(usage: pd.DataFrame) -> bool:
    """Whether the history says that any window was throttled."""
    if THROTTLED_COLUMN not in usage:
        return False
    return bool((usage[THROTTLED_COLUMN].to_numpy(dtype=np.float64) > 0).any())


def with_cpu_demand(usage: pd.DataFrame) -> pd.DataFrame:
    """The frame with `cpu` raised by what throttling held back (unchanged without any)."""
    if not has_throttling(usage):
        return usage
    held_back = np.nan_to_num(usage[THROTTLED_COLUMN].to_numpy(dtype=np.float64), nan=0.0)
    # a new frame sharing the other columns: a deep copy doubled the history in memory
    return usage.assign(cpu=usage["cpu"].to_numpy(dtype=np.float64) + held_back)


def throttling_notes(usage: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """One sentence per group of `keys` whose CPU was throttled, for explanations.

    Columns: the keys and `throttling`; groups never throttled have no row.
    """
    if not has_throttling(usage):
        return pd.DataFrame(columns=[*keys, "throttling"])
    held_back = usage[THROTTLED_COLUMN].fillna(0.0)
    frame = usage.loc[:, list(keys)].assign(
        held_back=held_back, throttled=held_back >= THROTTLED_SHARE_NOTED
    )
    grouped = frame.groupby(list(keys), sort=True)
    summary = grouped.agg(share=("throttled", "mean"), peak=("held_back", "max")).reset_index()
    summary = summary[summary["share"] > 0]
    summary["throttling"] = [
        f"its CPU limit throttled it in {_share(share)} of windows (up to {peak:.3g} cores "
        "held back): sized on usage + throttled time"
        for share, peak in zip(summary["share"], summary["peak"], strict=True)
    ]
    return summary.loc[:, [*keys, "throttling"]].reset_index(drop=True)


def _share(share: float) -> str:
    return f"{share:.0%}" if share >= 0.01 else "under 1%"
