"""OOM kills of an events table, matched to the series of a usage history.

Both models (`recommend_vpa`, the forecaster) and the CLI's note on events that
match nothing use this one rule, so they cannot disagree on which kill belongs
to which container: a kill belongs to the series with its namespace, pod and
container; the workload label plays no part (events may omit it). Nor on when a
kill counts: from the start of the history the model remembers (`history_start`)
on, however long after the last sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from recommender.data.timestamps import unix_seconds
from tailor.durations import DAY
from tailor.memory_pressure import MEMORY_PRESSURE

MATCH_COLUMNS = ("namespace", "pod", "container")
#: what the models take as an OOM kill: a kill, or a sustained-pressure episode
#: (`tailor.memory_pressure`), whose memory is the working set it reached
OOM_LIKE = ("OOMKilled", MEMORY_PRESSURE)


def history_start(first: int, last: int, days: float | None = None) -> int:
    """The first UNIX second of the history a model remembers; older kills are dropped.

    A model that remembers everything it is given (the VPA model) starts at the first
    sample, as upstream's recommender only learns of kills while it runs. One that keeps
    the `days` before the last sample (the forecaster's `history_days`) starts there,
    even when the samples start later: such a kill is recent news about the container.
    A kill older than either says nothing about today's memory.
    """
    if days is None:
        return int(first)
    return math.floor(last - days * DAY) + 1  # the samples kept are those after last - days


@dataclass(frozen=True)
class OomKills:
    """OOMKilled events of known series, in time order (arrays of one length).

    series: row of the keys frame they were matched to; seconds: UNIX seconds;
    memory: bytes in use at the kill (NaN = not reported); unmatched: kills that
    match no series (a namespace typo in an events file makes them all unmatched).
    """

    series: np.ndarray
    seconds: np.ndarray
    memory: np.ndarray
    unmatched: int

    def __len__(self) -> int:
        return int(self.series.size)


def _kills(events: pd.DataFrame | None) -> pd.DataFrame:
    if events is None or events.empty:
        return pd.DataFrame(columns=["timestamp", *MATCH_COLUMNS, "memory"])
    return events[events["reason"].isin(OOM_LIKE)]


def oom_kills(
    events: pd.DataFrame | None, keys: pd.DataFrame, since: int | None = None
) -> OomKills:
    """The OOM kills of a canonical events table matched to the rows of `keys`
    (one row per series, with the MATCH_COLUMNS; each combination at most once),
    leaving out those before `since` (see `history_start`; None keeps all)."""
    kills = _kills(events)
    if kills.empty:
        none = np.zeros(0, dtype=np.int64)
        return OomKills(none, none, np.zeros(0), 0)
    lookup = pd.MultiIndex.from_frame(keys.loc[:, list(MATCH_COLUMNS)].astype(str))
    rows = lookup.get_indexer(
        pd.MultiIndex.from_frame(kills.loc[:, list(MATCH_COLUMNS)].astype(str))
    )
    known = rows >= 0
    seconds = unix_seconds(kills["timestamp"])
    kept = known if since is None else known & (seconds >= since)
    seconds = seconds[kept]
    memory = kills["memory"].to_numpy(dtype=np.float64)[kept]
    order = np.argsort(seconds, kind="stable")
    return OomKills(
        rows[kept].astype(np.int64)[order],
        seconds[order],
        memory[order],
        int(np.count_nonzero(~known)),
    )


def unmatched_oom_kills(usage: pd.DataFrame, events: pd.DataFrame | None) -> int:
    """How many OOM kills of `events` match no series of a canonical usage frame.

    The models ignore such kills; a caller can say so. Only the rows of the
    killed pods are looked at, so a long history costs one `isin`.
    """
    kills = _kills(events)
    if kills.empty:
        return 0
    candidates = usage.loc[usage["pod"].isin(kills["pod"].unique()), list(MATCH_COLUMNS)]
    return oom_kills(kills, candidates.drop_duplicates()).unmatched
