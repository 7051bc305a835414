"""Bitbrains Rnd (GWA-T-12): per-VM monthly CSV files, read and repaired into usage."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from recommender.data.files import PathLike
from recommender.data.schema import STRING_DTYPE, DataFormatError, numeric_values
from recommender.data.traces.long_frame import reading, series_frame

log = logging.getLogger(__name__)

BITBRAINS_DIR = "bitbrains-rnd"
BITBRAINS_MONTHS = ("2013-7", "2013-8", "2013-9")
BITBRAINS_COLUMNS = {  # raw header -> short name, in file order
    "Timestamp [ms]": "seconds",  # UNIX seconds despite the name
    "CPU cores": "cores",
    "CPU capacity provisioned [MHZ]": "capacity_mhz",
    "CPU usage [MHZ]": "usage_mhz",
    "Memory capacity provisioned [KB]": "memory_capacity_kib",
    "Memory usage [KB]": "memory_kib",
}


def _read_bitbrains_file(path: Path) -> pd.DataFrame:
    """One raw file as numbers: 'value;<TAB>value' parses with the C engine via skipinitialspace."""
    source = str(path)
    with reading(source):
        raw = pd.read_csv(path, sep=";", skipinitialspace=True, usecols=[0, 1, 2, 3, 5, 6])
    header = [str(name).strip() for name in raw.columns]
    for found, expected in zip(header, BITBRAINS_COLUMNS, strict=True):
        if found != expected:
            raise DataFormatError(source, f"expected header {expected!r}", column=found)
    if raw.empty:
        raise DataFormatError(source, "no data rows")
    numbers = {}
    for raw_name, name in zip(raw.columns, BITBRAINS_COLUMNS.values(), strict=True):
        column = raw[raw_name]
        if not pd.api.types.is_numeric_dtype(column):  # only a bad file: show its cells bare
            column = column.astype(STRING_DTYPE).str.strip()
        values = numeric_values(column, str(raw_name).strip(), source)
        hits = np.flatnonzero(np.isnan(values))
        if hits.size:
            raise DataFormatError(
                source, "missing value", row=int(hits[0]) + 1, column=str(raw_name).strip()
            )
        numbers[name] = values
    return pd.DataFrame(numbers)


def _clean_bitbrains(raw: pd.DataFrame, cleaning: dict[str, int]) -> pd.DataFrame:
    """Drop rows of an unprovisioned VM, order by time, keep the last of duplicate timestamps.

    Rows with 0 cores or 0 MHz capacity come from a VM not (yet / any more)
    provisioned: their counters are zero or frozen (four September VMs repeat one
    value for ~6 days, with each timestamp twice or thrice), so they are not usage.
    """
    provisioned = (raw["cores"] > 0) & (raw["capacity_mhz"] > 0)
    cleaning["unprovisioned_rows_dropped"] += int((~provisioned).sum())
    kept = raw[provisioned]
    seconds = kept["seconds"].to_numpy()
    if np.any(np.diff(seconds) < 0):
        cleaning["files_reordered"] += 1
        kept = kept.sort_values("seconds", kind="stable")
        seconds = kept["seconds"].to_numpy()
    last_of_each = np.append(seconds[1:] != seconds[:-1], True)
    cleaning["duplicate_timestamps_dropped"] += int((~last_of_each).sum())
    return kept[last_of_each]


def load_bitbrains(
    root: PathLike,
    months: Iterable[str] = BITBRAINS_MONTHS,
    vms: Iterable[int] | None = None,
) -> pd.DataFrame:
    """Bitbrains Rnd: one series per (VM, month), pod and workload f"vm-{id}-{month}".

    cpu (cores) = CPU usage [MHZ] / (CPU capacity provisioned [MHZ] / CPU cores);
    memory (bytes) = Memory usage [KB] * 1024. The provisioned size is carried as
    requests and limits (cpu_request = cpu_limit = cores, memory_request =
    memory_limit = provisioned KiB * 1024): what a VM owner reserved, i.e. the
    baseline a recommender competes with. A memory usage of 0 KB is read as
    "not reported" (NaN). See _clean_bitbrains for the other repairs.
    """
    folder = Path(root) / BITBRAINS_DIR
    cleaning = dict.fromkeys(
        ("files", "rows_read", "unprovisioned_rows_dropped", "duplicate_timestamps_dropped"), 0
    )
    cleaning["files_reordered"] = 0
    pods: list[str] = []
    parts: list[pd.DataFrame] = []
    for month in months:
        month_folder = folder / month
        if not month_folder.is_dir():
            raise FileNotFoundError(f"{month_folder}: no such Bitbrains month folder")
        for vm, path in _bitbrains_files(month_folder, vms):
            raw = _read_bitbrains_file(path)
            cleaning["files"] += 1
            cleaning["rows_read"] += len(raw)
            parts.append(_clean_bitbrains(raw, cleaning))
            pods.append(f"vm-{vm}-{month}")
    if not parts:
        raise ValueError(f"{folder}: no Bitbrains files selected")
    raw = pd.concat(parts, ignore_index=True)
    mhz_per_core = raw["capacity_mhz"].to_numpy() / raw["cores"].to_numpy()
    memory_capacity = raw["memory_capacity_kib"].to_numpy() * 1024.0
    memory_capacity[memory_capacity == 0] = np.nan  # not reported: "not set"
    memory = raw["memory_kib"].to_numpy() * 1024.0
    # A running VM never has a zero working set: 0 KB means "not reported" (one VM
    # shows it in 5,044 of 8,640 windows). Reading it as usage would fake a 0-byte peak.
    unreported = memory == 0
    cleaning["zero_memory_samples_unmeasured"] = int(unreported.sum())
    memory[unreported] = np.nan
    columns = {
        "seconds": raw["seconds"].to_numpy(),
        "cpu": raw["usage_mhz"].to_numpy() / mhz_per_core,
        "memory": memory,
        "cpu_request": raw["cores"].to_numpy(dtype=np.float64),
        "memory_request": memory_capacity,
        "cpu_limit": raw["cores"].to_numpy(dtype=np.float64),
        "memory_limit": memory_capacity,
    }
    lengths = np.array([len(part) for part in parts])
    log.info("bitbrains: %s", cleaning)
    return series_frame("bitbrains", pods, pods, lengths, columns, cleaning, str(folder))


def _bitbrains_files(month_folder: Path, vms: Iterable[int] | None) -> list[tuple[int, Path]]:
    if vms is not None:
        chosen = [(int(vm), month_folder / f"{int(vm)}.csv.gz") for vm in vms]
        for _, path in chosen:
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no such Bitbrains file")
        return chosen
    found = []
    for path in month_folder.glob("*.csv.gz"):
        stem = path.name.removesuffix(".csv.gz")
        if not stem.isdigit():
            raise DataFormatError(str(path), "Bitbrains file names must be <vm id>.csv.gz")
        found.append((int(stem), path))
    return sorted(found)
