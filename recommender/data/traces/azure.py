"""Azure Public Dataset V1: 100 VMs' CPU percentages, one column per VM, no memory."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from recommender.data.files import PathLike
from recommender.data.schema import DataFormatError, numeric_values
from recommender.data.traces.long_frame import TRACE_STEP, check_limit, reading, series_frame

AZURE_DIR = "azure-v1-cpu"
AZURE_EPOCH = pd.Timestamp("2017-01-01T00:00:00Z")  # step 1 of the trace is stamped here


def load_azure(
    root: PathLike, kind: Literal["avg", "max"] = "avg", limit: int | None = None
) -> pd.DataFrame:
    """Azure V1 CPU: one series per VM column, pod and workload f"vm-{column}".

    cpu = percent / 100, treating 100 % of the VM's own vCPUs as one core (VM sizes
    are unknown). With kind="max" the cpu column holds each window's maximum
    instead of its average. Row k (the step number, from 1) is stamped
    AZURE_EPOCH + (k - 1) * 300 s. The trace has no memory: memory is NaN
    ("not measured") for every series.
    """
    if kind not in ("avg", "max"):
        raise ValueError(f"kind must be 'avg' or 'max', not {kind!r}")
    check_limit(limit)
    path = Path(root) / AZURE_DIR / f"microsoft_{kind}_100.csv.gz"
    source = str(path)
    with reading(source):
        raw = pd.read_csv(path)
    if raw.empty:
        raise DataFormatError(source, "no data rows")
    step_column = str(raw.columns[0])
    if step_column != "step_5min":
        raise DataFormatError(
            source, "expected the step column 'step_5min' first", column=step_column
        )
    steps = numeric_values(raw[step_column], step_column, source)
    expected = np.arange(1, len(raw) + 1)
    hits = np.flatnonzero(steps != expected)
    if hits.size:
        raise DataFormatError(
            source, f"expected step {hits[0] + 1}", row=int(hits[0]) + 1, column=step_column
        )
    vm_columns = [str(name) for name in raw.columns[1:]][:limit]
    percent = np.empty((len(vm_columns), len(raw)))
    for index, name in enumerate(vm_columns):
        values = numeric_values(raw[name], name, source)
        hits = np.flatnonzero(np.isnan(values))
        if hits.size:
            raise DataFormatError(source, "missing value", row=int(hits[0]) + 1, column=name)
        percent[index] = values
    epoch = AZURE_EPOCH.timestamp()
    seconds = np.tile(epoch + (steps - 1) * TRACE_STEP, len(vm_columns))
    columns = {
        "seconds": seconds,
        "cpu": percent.ravel() / 100.0,
        "memory": np.full(percent.size, np.nan),
    }
    pods = [f"vm-{name}" for name in vm_columns]
    lengths = np.full(len(pods), len(raw))
    cleaning = {"files": 1, "rows_read": len(raw), "series": len(pods)}
    return series_frame("azure", pods, pods, lengths, columns, cleaning, source)
