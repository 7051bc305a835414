"""Loaders that turn the real public traces into the canonical usage format.

The traces live outside the repository (../shared/data, or $KUBE_TAILOR_DATA)
and are read where they are. Each loader documents its unit conversions and
any repair of the raw data; repairs are counted in `frame.attrs["cleaning"]`
and logged, never done silently. Every result passes `validate_usage`.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import tarfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from recommender.data.files import PathLike
from recommender.data.schema import STRING_DTYPE, DataFormatError, numeric_values, validate_usage

log = logging.getLogger(__name__)

DATASETS = ("bitbrains", "azure", "google2011")
DATA_ENV = "KUBE_TAILOR_DATA"
REPO_ROOT = Path(__file__).resolve().parents[2]
TRACE_STEP = 300  # seconds between samples in all three traces
GIB = 2**30

CITATIONS = {
    "bitbrains": "Bitbrains GWA-T-12 Rnd trace, Grid Workloads Archive, TU Delft; Shen, van Beek, "
    'Iosup, "Statistical Characterization of Business-Critical Workloads Hosted in Cloud '
    'Datacenters", CCGrid 2015.',
    "azure": 'Azure Public Dataset V1 (Cortez et al., "Resource Central", SOSP 2017; CC-BY 4.0), '
    "100 VMs as packaged in the R package DataCenterSim.",
    "google2011": "Google cluster-data 2011, job-aggregated series prepared by HiPro-IT.",
}

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

AZURE_DIR = "azure-v1-cpu"
AZURE_EPOCH = pd.Timestamp("2017-01-01T00:00:00Z")  # step 1 of the trace is stamped here

GOOGLE2011_DIR = "google-2011-jobs"
GOOGLE2011_ARCHIVE = "GCD_VMs.tar.gz"
GOOGLE2011_EPOCH = pd.Timestamp("2011-05-01T00:00:00Z")  # line 1 of every series
GOOGLE2011_CORES_PER_100PCT = 1.0
GOOGLE2011_BYTES_PER_100PCT = 4.0 * GIB
_GOOGLE_MEMBER = re.compile(r"(?:.*/)?vm_(\d+)_(\d+)")


def default_data_root() -> Path:
    """$KUBE_TAILOR_DATA if set, else ../shared/data beside the repository."""
    configured = os.environ.get(DATA_ENV)
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"


def load_dataset(name: str, root: PathLike | None = None, **options: Any) -> pd.DataFrame:
    """Load trace `name` (one of DATASETS) from `root` (default: default_data_root())."""
    loaders: dict[str, Callable[..., pd.DataFrame]] = {
        "bitbrains": load_bitbrains,
        "azure": load_azure,
        "google2011": load_google2011,
    }
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    folder = Path(root) if root is not None else default_data_root()
    if not folder.is_dir():
        raise FileNotFoundError(f"data folder {folder} not found; set ${DATA_ENV} to the traces")
    return loaders[name](folder, **options)


@contextmanager
def _reading(source: str) -> Iterator[None]:
    """A raw file pandas, gzip or tarfile cannot read becomes a DataFormatError naming it;
    their own errors (`No columns to parse from file`) named no file, and some were tracebacks."""
    try:
        yield
    except DataFormatError:
        raise
    except (ValueError, EOFError, zlib.error, gzip.BadGzipFile, tarfile.TarError) as error:
        raise DataFormatError(source, f"cannot read it: {error}") from None


def _repeat_labels(labels: list[str], codes: np.ndarray) -> pd.Series:
    """labels[codes] as a string column, built in Arrow (no million Python str objects)."""
    return pd.Series(pd.array(pa.array(labels).take(pa.array(codes)), dtype=STRING_DTYPE))


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 series, not {limit}")


def _series_frame(
    namespace: str,
    pods: list[str],
    workloads: list[str],
    lengths: np.ndarray,
    columns: dict[str, np.ndarray],
    cleaning: dict[str, int],
    source: str,
) -> pd.DataFrame:
    """Assemble a long frame from per-series arrays laid end to end, and validate it."""
    codes = np.repeat(np.arange(len(pods)), lengths)
    frame = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(columns["seconds"], unit="s", utc=True),
            "namespace": namespace,
            "workload": _repeat_labels(workloads, codes),
            "pod": _repeat_labels(pods, codes),
            "container": "main",
            **{name: values for name, values in columns.items() if name != "seconds"},
        }
    )
    result = validate_usage(frame, source)
    result.attrs["cleaning"] = cleaning
    return result


# --- Bitbrains -------------------------------------------------------------------------------


def _read_bitbrains_file(path: Path) -> pd.DataFrame:
    """One raw file as numbers: 'value;<TAB>value' parses with the C engine via skipinitialspace."""
    source = str(path)
    with _reading(source):
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
    return _series_frame("bitbrains", pods, pods, lengths, columns, cleaning, str(folder))


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


# --- Azure -----------------------------------------------------------------------------------


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
    _check_limit(limit)
    path = Path(root) / AZURE_DIR / f"microsoft_{kind}_100.csv.gz"
    source = str(path)
    with _reading(source):
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
    return _series_frame("azure", pods, pods, lengths, columns, cleaning, source)


# --- Google 2011 -----------------------------------------------------------------------------


def _google_members(path: Path) -> dict[tuple[int, int], tuple[str, bytes]]:
    """Every series file of the archive, read in one streaming pass (nothing extracted)."""
    members: dict[tuple[int, int], tuple[str, bytes]] = {}
    with _reading(str(path)), tarfile.open(path, "r|gz") as archive:
        for member in archive:
            if not member.isfile():
                continue
            match = _GOOGLE_MEMBER.fullmatch(member.name)
            if match is None:
                raise DataFormatError(f"{path}:{member.name}", "expected a file named vm_<job>_<n>")
            handle = archive.extractfile(member)
            assert handle is not None  # regular files always have content
            key = (int(match.group(1)), int(match.group(2)))
            members[key] = (member.name, handle.read())
    return members


def _parse_google_series(content: bytes, source: str) -> np.ndarray:
    """(lines, 2) float array of 'cpu% mem%' lines; the slow path only locates an error."""
    lines = content.splitlines()
    tokens = content.split()
    if lines and len(tokens) == 2 * len(lines):
        try:
            values = np.array(tokens, dtype=np.float64).reshape(-1, 2)
        except ValueError:
            values = None
        if values is not None and np.all(np.isfinite(values)) and np.all(values >= 0):
            return values
    if not lines:
        raise DataFormatError(source, "no data rows")
    for row, line in enumerate(lines, start=1):
        fields = line.split()
        if len(fields) != 2:
            raise DataFormatError(source, f"expected 2 fields, found {len(fields)}", row=row)
        for name, field in zip(("cpu %", "memory %"), fields, strict=True):
            try:
                value = float(field)
            except ValueError:
                raise DataFormatError(
                    source,
                    f"not a number: {field.decode(errors='replace')!r}",
                    row=row,
                    column=name,
                ) from None
            if not np.isfinite(value) or value < 0:
                raise DataFormatError(source, f"invalid value {value}", row=row, column=name)
    raise AssertionError("unreachable: the fast path rejected a valid series")


def load_google2011(
    root: PathLike,
    limit: int | None = None,
    cores_per_100pct: float = GOOGLE2011_CORES_PER_100PCT,
    bytes_per_100pct: float = GOOGLE2011_BYTES_PER_100PCT,
) -> pd.DataFrame:
    """Google 2011 job series: pod f"job-{job}-{n}", workload f"job-{job}".

    The archive's percentages are of one normalised machine for both resources.
    We map 100 % to 1 core and 4 GiB: the 1 vCPU : 4 GiB shape of general-purpose
    cloud machines, so equal percentages stay equal shares of one machine. Line
    k of a series (from 0) is stamped GOOGLE2011_EPOCH + k * 300 s. `limit` keeps
    the first series in (job, n) order.
    """
    _check_limit(limit)
    path = Path(root) / GOOGLE2011_DIR / GOOGLE2011_ARCHIVE
    members = _google_members(path)
    chosen = sorted(members)[:limit]
    if not chosen:
        raise DataFormatError(str(path), "no series selected")
    pods, workloads, parts = [], [], []
    for job, n in chosen:
        name, content = members[(job, n)]
        parts.append(_parse_google_series(content, f"{path}:{name}"))
        pods.append(f"job-{job}-{n}")
        workloads.append(f"job-{job}")
    lengths = np.array([len(part) for part in parts])
    values = np.concatenate(parts)
    line = np.concatenate([np.arange(length) for length in lengths])
    columns = {
        "seconds": GOOGLE2011_EPOCH.timestamp() + line * TRACE_STEP,
        "cpu": values[:, 0] / 100.0 * cores_per_100pct,
        "memory": values[:, 1] / 100.0 * bytes_per_100pct,
    }
    cleaning = {"files": len(chosen), "rows_read": int(lengths.sum())}
    return _series_frame("google2011", pods, workloads, lengths, columns, cleaning, str(path))
