"""Google cluster-data 2011 job series: one tar.gz of 'cpu% mem%' files, read in one pass."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd

from recommender.data.files import PathLike
from recommender.data.schema import DataFormatError
from recommender.data.traces.long_frame import GIB, TRACE_STEP, check_limit, reading, series_frame

GOOGLE2011_DIR = "google-2011-jobs"
GOOGLE2011_ARCHIVE = "GCD_VMs.tar.gz"
GOOGLE2011_EPOCH = pd.Timestamp("2011-05-01T00:00:00Z")  # line 1 of every series
GOOGLE2011_CORES_PER_100PCT = 1.0
GOOGLE2011_BYTES_PER_100PCT = 4.0 * GIB
LINES_PER_DAY = 288  # a file is one day of a job at 300 s
_GOOGLE_MEMBER = re.compile(r"(?:.*/)?vm_(\d+)_(\d+)")


def _google_members(path: Path) -> dict[tuple[int, int], tuple[str, bytes]]:
    """Every series file of the archive, read in one streaming pass (nothing extracted)."""
    members: dict[tuple[int, int], tuple[str, bytes]] = {}
    with reading(str(path)), tarfile.open(path, "r|gz") as archive:
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
    """Google 2011 job series: one series per job, pod and workload f"job-{job}".

    A file `vm_<job>_<n>` is day n (1 to 10) of job `job`, not a series of its
    own: its last line runs on into the first line of day n + 1 as any two
    neighbouring lines do (median step 3.6 % of the job's mean CPU, against 3.4 %
    inside a day, and 9.5 % from day n + 1's end back to day n's start). So a
    job's days are laid end to end, day n from GOOGLE2011_EPOCH + (n - 1) days,
    and a missing day is a gap. (`--split 1d` in a backtest cuts them apart
    again: one-day pieces, each a young container.)
    The archive's percentages are of one normalised machine for both resources.
    We map 100 % to 1 core and 4 GiB: the 1 vCPU : 4 GiB shape of general-purpose
    cloud machines, so equal percentages stay equal shares of one machine.
    `limit` keeps the first jobs in job order.
    """
    check_limit(limit)
    path = Path(root) / GOOGLE2011_DIR / GOOGLE2011_ARCHIVE
    members = _google_members(path)
    jobs = sorted({job for job, _ in members})[:limit]
    if not jobs:
        raise DataFormatError(str(path), "no series selected")
    kept = set(jobs)
    chosen = [key for key in sorted(members) if key[0] in kept]
    parts, lines = [], []
    for job, day in chosen:
        name, content = members[(job, day)]
        part = _parse_google_series(content, f"{path}:{name}")
        if day < 1 or len(part) > LINES_PER_DAY:
            raise DataFormatError(
                f"{path}:{name}", f"expected day 1 or later of at most {LINES_PER_DAY} lines"
            )
        parts.append(part)
        lines.append((day - 1) * LINES_PER_DAY + np.arange(len(part)))
    index = {job: k for k, job in enumerate(jobs)}
    owner = [index[job] for job, _ in chosen]
    sizes = [len(part) for part in parts]
    lengths = np.bincount(owner, weights=sizes, minlength=len(jobs)).astype(np.int64)
    values = np.concatenate(parts)
    columns = {
        "seconds": GOOGLE2011_EPOCH.timestamp() + np.concatenate(lines) * TRACE_STEP,
        "cpu": values[:, 0] / 100.0 * cores_per_100pct,
        "memory": values[:, 1] / 100.0 * bytes_per_100pct,
    }
    names = [f"job-{job}" for job in jobs]
    cleaning = {"files": len(chosen), "rows_read": len(values)}
    return series_frame("google2011", names, names, lengths, columns, cleaning, str(path))
