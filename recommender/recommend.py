"""The library entry point: canonical history in, one recommendation per container out.

This is what the CLI, notebooks and the live recommender call. It groups pods
into (namespace, workload, container) aggregates the way a VPA merges the pods
it selects, feeds the vectorised model, and returns a tidy DataFrame.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from recommender.data.arrays import KEY_COLUMNS
from recommender.vpa.model import VpaModel
from recommender.vpa.settings import VpaSettings

AGGREGATE_COLUMNS = ("namespace", "workload", "container")
RECOMMENDATION_COLUMNS = (
    *AGGREGATE_COLUMNS,
    "cpu_target",
    "cpu_lower",
    "cpu_upper",
    "memory_target",
    "memory_lower",
    "memory_upper",
)
INGEST_CHUNK = 2_000_000

ProgressCallback = Callable[[int, int], None]


def _series_codes(usage: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    keys = usage.loc[:, list(KEY_COLUMNS)].astype(str)
    codes, uniques = pd.MultiIndex.from_frame(keys).factorize()
    series = uniques.to_frame(index=False)
    series.columns = list(KEY_COLUMNS)
    return codes.astype(np.int64), series


def aggregate_index(series: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """Map each (pod, container) series to its (namespace, workload, container) aggregate."""
    codes, uniques = pd.MultiIndex.from_frame(series.loc[:, list(AGGREGATE_COLUMNS)]).factorize()
    aggregates = uniques.to_frame(index=False)
    aggregates.columns = list(AGGREGATE_COLUMNS)
    return codes.astype(np.int64), aggregates


def containers_per_pod(aggregates: pd.DataFrame) -> np.ndarray:
    """How many containers of a workload share the pod minimum (upstream splits it evenly)."""
    per_workload = aggregates.groupby(["namespace", "workload"])["container"].transform("nunique")
    return per_workload.to_numpy(dtype=np.float64)


def recommend_vpa(
    usage: pd.DataFrame,
    events: pd.DataFrame | None = None,
    settings: VpaSettings | None = None,
    progress: ProgressCallback | None = None,
) -> pd.DataFrame:
    """Upstream-VPA recommendations for a validated canonical usage frame."""
    settings = settings or VpaSettings()
    codes, series = _series_codes(usage)
    to_aggregate, aggregates = aggregate_index(series)
    model = VpaModel(to_aggregate, len(aggregates), settings)
    seconds = usage["timestamp"].astype("datetime64[s, UTC]").astype("int64").to_numpy()
    cpu = usage["cpu"].to_numpy(dtype=np.float64)
    memory = usage["memory"].to_numpy(dtype=np.float64)
    total = len(usage)
    for begin in range(0, total, INGEST_CHUNK):
        end = min(begin + INGEST_CHUNK, total)
        model.add_samples(codes[begin:end], seconds[begin:end], cpu[begin:end], memory[begin:end])
        if progress is not None:
            progress(end, total)
    if events is not None and not events.empty:
        _add_ooms(model, events, series, usage)
    result = model.recommend(containers_per_pod(aggregates))
    frame = aggregates.copy()
    frame["cpu_target"] = result.cpu_target
    frame["cpu_lower"] = result.cpu_lower
    frame["cpu_upper"] = result.cpu_upper
    frame["memory_target"] = result.memory_target
    frame["memory_lower"] = result.memory_lower
    frame["memory_upper"] = result.memory_upper
    return frame


def _add_ooms(
    model: VpaModel, events: pd.DataFrame, series: pd.DataFrame, usage: pd.DataFrame
) -> None:
    """Feed OOM kills; the memory they carry counts as the request at the time."""
    ooms = events[events["reason"] == "OOMKilled"]
    if ooms.empty:
        return
    if "workload" not in ooms.columns:
        pod_workload = usage.drop_duplicates(["namespace", "pod"]).set_index(["namespace", "pod"])
        ooms = ooms.join(pod_workload["workload"], on=["namespace", "pod"])
        ooms["workload"] = ooms["workload"].fillna(ooms["pod"])
    lookup = pd.MultiIndex.from_frame(series.loc[:, list(KEY_COLUMNS)])
    wanted = pd.MultiIndex.from_frame(ooms.loc[:, list(KEY_COLUMNS)].astype(str))
    index = lookup.get_indexer(wanted)
    known = index >= 0
    if not known.any():
        return
    seconds = ooms["timestamp"].astype("datetime64[s, UTC]").astype("int64").to_numpy()
    model.add_oom(
        index[known].astype(np.int64),
        seconds[known],
        ooms["memory"].to_numpy(dtype=np.float64)[known],
    )
