"""The trace loaders, on the real shared traces and on small hand-made copies of their formats.

Expected values are computed here from raw lines read independently of the
loaders (gzip / tarfile and str.split), so a unit slip in a loader shows.
"""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recommender.backtest.pieces import split_series
from recommender.data.arrays import from_long
from recommender.data.schema import DataFormatError
from recommender.data.traces import DATA_ENV, REPO_ROOT, default_data_root, load_dataset
from recommender.data.traces.azure import AZURE_EPOCH, load_azure
from recommender.data.traces.bitbrains import load_bitbrains
from recommender.data.traces.google2011 import GOOGLE2011_EPOCH, load_google2011
from recommender.data.traces.long_frame import GIB

BITBRAINS_HEADER = (
    "Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\t"
    "CPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\t"
    "Disk read throughput [KB/s];\tDisk write throughput [KB/s];\t"
    "Network received throughput [KB/s];\tNetwork transmitted throughput [KB/s]"
)


def raw_fields(path: Path, data_row: int, separator: str) -> list[str]:
    """Field `data_row` (1-based, after the header) of a gzip text file, split by hand."""
    with gzip.open(path, "rt") as handle:
        lines = handle.read().splitlines()
    return [field.strip() for field in lines[data_row].split(separator)]


def at(frame: pd.DataFrame, pod: str, when: pd.Timestamp) -> pd.Series:
    match = frame[(frame["pod"] == pod) & (frame["timestamp"] == when)]
    assert len(match) == 1, f"expected one row for {pod} at {when}"
    return match.iloc[0]


# --- Bitbrains, real data ------------------------------------------------------------------


@pytest.fixture(scope="module")
def bitbrains(shared_data: Path) -> pd.DataFrame:
    return load_bitbrains(shared_data)


def test_bitbrains_has_150_vm_months(bitbrains: pd.DataFrame) -> None:
    assert bitbrains["pod"].nunique() == 150
    assert (bitbrains["workload"] == bitbrains["pod"]).all()
    assert set(bitbrains["namespace"]) == {"bitbrains"} and set(bitbrains["container"]) == {"main"}
    cleaning = bitbrains.attrs["cleaning"]
    assert cleaning["files"] == 150
    assert cleaning["rows_read"] - cleaning["unprovisioned_rows_dropped"] == len(bitbrains)
    assert cleaning["unprovisioned_rows_dropped"] > 0  # e.g. 2013-9/41 from row 6500 on
    arrays = from_long(bitbrains)
    assert (arrays.n_series, arrays.step) == (150, 300)


def test_bitbrains_units_match_a_raw_line(bitbrains: pd.DataFrame, shared_data: Path) -> None:
    path = shared_data / "bitbrains-rnd" / "2013-8" / "91.csv.gz"
    fields = raw_fields(path, 100, ";")
    seconds, cores, capacity, usage = (
        int(fields[0]),
        float(fields[1]),
        float(fields[2]),
        float(fields[3]),
    )
    row = at(bitbrains, "vm-91-2013-8", pd.Timestamp(seconds, unit="s", tz="UTC"))
    assert row["cpu"] == pytest.approx(usage / (capacity / cores), rel=1e-12)
    assert row["memory"] == pytest.approx(float(fields[6]) * 1024, rel=1e-12)
    assert row["cpu_request"] == row["cpu_limit"] == cores
    assert row["memory_limit"] == pytest.approx(float(fields[5]) * 1024, rel=1e-12)


def test_bitbrains_first_line_of_vm_1(bitbrains: pd.DataFrame) -> None:
    # From `zcat 2013-7/1.csv.gz | head -2`: 1372629804; 2; 5851.9989; 87.7799835; ...; 1034592.8
    row = at(bitbrains, "vm-1-2013-7", pd.Timestamp(1372629804, unit="s", tz="UTC"))
    assert row["cpu"] == pytest.approx(87.7799835 / (5851.9989 / 2))
    assert row["memory"] == pytest.approx(1034592.8 * 1024)


def test_bitbrains_unprovisioned_rows_are_gone(bitbrains: pd.DataFrame, shared_data: Path) -> None:
    path = shared_data / "bitbrains-rnd" / "2013-9" / "41.csv.gz"
    fields = raw_fields(path, 6500, ";")  # 0 cores, 0 MHz: the VM was no longer provisioned
    assert float(fields[1]) == 0 and float(fields[2]) == 0
    vm = bitbrains[bitbrains["pod"] == "vm-41-2013-9"]
    assert vm["timestamp"].max() < pd.Timestamp(int(fields[0]), unit="s", tz="UTC")
    assert len(vm) == 6499  # data rows 1..6499


def test_bitbrains_selection(shared_data: Path) -> None:
    frame = load_bitbrains(shared_data, months=("2013-7",), vms=[1, 11])
    assert sorted(frame["pod"].unique()) == ["vm-1-2013-7", "vm-11-2013-7"]
    with pytest.raises(FileNotFoundError, match=r"2013-7/2\.csv\.gz"):
        load_bitbrains(shared_data, months=("2013-7",), vms=[2])
    with pytest.raises(FileNotFoundError, match="2013-13"):
        load_bitbrains(shared_data, months=("2013-13",))


# --- Bitbrains, hand-made files --------------------------------------------------------------


def fake_bitbrains(root: Path, month: str, vm: int, rows: list[str]) -> Path:
    folder = root / "bitbrains-rnd" / month
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{vm}.csv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join([BITBRAINS_HEADER, *rows]) + "\n")
    return path


def bb_row(seconds: int, cores: int, mhz: float, usage: float, memory_kib: float) -> str:
    fields = [seconds, cores, mhz, usage, 0.0, 1024.0, memory_kib, 0.0, 0.0, 0.0, 0.0]
    return ";\t".join(str(field) for field in fields)


def test_bitbrains_repairs_are_explicit_and_counted(tmp_path: Path) -> None:
    fake_bitbrains(
        tmp_path,
        "2013-7",
        5,
        [
            bb_row(600, 0, 0.0, 0.0, 0.0),  # unprovisioned: dropped
            bb_row(900, 2, 5000.0, 1250.0, 20.0),
            bb_row(300, 2, 5000.0, 1000.0, 10.0),  # out of order: sorted
            bb_row(900, 2, 5000.0, 2500.0, 30.0),  # duplicate timestamp: the last one wins
            bb_row(1200, 2, 5000.0, 500.0, 0.0),  # memory not reported: NaN, row kept
        ],
    )
    frame = load_bitbrains(tmp_path, months=("2013-7",))
    assert (
        frame["timestamp"].tolist() == pd.to_datetime([300, 900, 1200], unit="s", utc=True).tolist()
    )
    assert frame["cpu"].tolist() == [1000.0 / 2500.0, 2500.0 / 2500.0, 500.0 / 2500.0]
    assert frame["memory"].tolist()[:2] == [10.0 * 1024, 30.0 * 1024]
    assert np.isnan(frame["memory"].iloc[2])
    assert frame.attrs["cleaning"] == {
        "files": 1,
        "rows_read": 5,
        "unprovisioned_rows_dropped": 1,
        "duplicate_timestamps_dropped": 1,
        "files_reordered": 1,
        "zero_memory_samples_unmeasured": 1,
    }


def test_bitbrains_bad_cell_names_file_row_and_column(tmp_path: Path) -> None:
    good = bb_row(300, 2, 5000.0, 1000.0, 10.0)
    path = fake_bitbrains(tmp_path, "2013-7", 5, [good, good.replace("1000.0", "n/a")])
    with pytest.raises(DataFormatError) as caught:
        load_bitbrains(tmp_path, months=("2013-7",))
    assert str(caught.value) == f"{path}: row 2, column 'CPU usage [MHZ]': not a number: 'n/a'"


def test_bitbrains_wrong_header_is_named(tmp_path: Path) -> None:
    path = fake_bitbrains(tmp_path, "2013-7", 5, [bb_row(300, 2, 5000.0, 1000.0, 10.0)])
    text = gzip.decompress(path.read_bytes()).decode().replace("CPU cores", "Cores")
    path.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(DataFormatError, match=r"column 'Cores': expected header 'CPU cores'"):
        load_bitbrains(tmp_path, months=("2013-7",))


def test_an_unreadable_bitbrains_file_is_named(tmp_path: Path) -> None:
    """pandas' and gzip's own errors named no file (and were not DataFormatError)."""
    path = fake_bitbrains(tmp_path, "2013-7", 5, [bb_row(300, 2, 5000.0, 1000.0, 10.0)])
    path.write_bytes(path.read_bytes()[:-10])  # truncated
    named = f"^{re.escape(str(path))}: cannot read it: "
    with pytest.raises(DataFormatError, match=named + "Compressed file ended"):
        load_bitbrains(tmp_path, months=("2013-7",))
    path.write_bytes(gzip.compress(b""))
    with pytest.raises(DataFormatError, match=named + "No columns to parse"):
        load_bitbrains(tmp_path, months=("2013-7",))


# --- Azure ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def azure(shared_data: Path) -> pd.DataFrame:
    return load_azure(shared_data)


def test_azure_shape_and_cpu_only(azure: pd.DataFrame) -> None:
    assert len(azure) == 100 * 8004
    assert azure["pod"].nunique() == 100
    assert azure["memory"].isna().all()
    assert azure["timestamp"].min() == AZURE_EPOCH
    assert azure["timestamp"].max() == AZURE_EPOCH + pd.Timedelta(seconds=8003 * 300)
    arrays = from_long(azure)
    assert (arrays.n_series, arrays.n_windows, arrays.step) == (100, 8004, 300)
    assert not np.isnan(arrays.cpu).any()


def test_azure_units_match_a_raw_line(azure: pd.DataFrame, shared_data: Path) -> None:
    path = shared_data / "azure-v1-cpu" / "microsoft_avg_100.csv.gz"
    header = raw_fields(path, 0, ",")
    fields = raw_fields(path, 5000, ",")
    assert fields[0] == "5000"
    when = AZURE_EPOCH + pd.Timedelta(seconds=4999 * 300)
    for column in (1, 57, 100):
        row = at(azure, f"vm-{header[column]}", when)
        assert row["cpu"] == pytest.approx(float(fields[column]) / 100.0, rel=1e-12)


def test_azure_max_is_at_least_avg(azure: pd.DataFrame, shared_data: Path) -> None:
    peaks = load_azure(shared_data, kind="max", limit=3)
    assert peaks["pod"].nunique() == 3
    averages = azure[azure["pod"].isin(peaks["pod"].unique())]
    assert (peaks["cpu"].to_numpy() >= averages["cpu"].to_numpy() - 1e-12).all()
    assert (peaks["cpu"].to_numpy() > averages["cpu"].to_numpy()).mean() > 0.5
    with pytest.raises(ValueError, match="kind"):
        load_azure(shared_data, kind="median")  # type: ignore[arg-type]


# --- Google 2011 ----------------------------------------------------------------------------


def test_google_full_archive_is_one_series_per_job(shared_data: Path) -> None:
    frame = load_google2011(shared_data)
    assert len(frame) == 1600 * 288
    assert frame["pod"].nunique() == 251
    assert (frame["pod"] == frame["workload"]).all()
    assert frame["timestamp"].min() == GOOGLE2011_EPOCH
    assert frame["timestamp"].max() == GOOGLE2011_EPOCH + pd.Timedelta(days=10) - pd.Timedelta(
        minutes=5
    )
    assert frame.attrs["cleaning"] == {"files": 1600, "rows_read": 1600 * 288}


def test_google_days_of_a_job_run_on_into_each_other(shared_data: Path) -> None:
    """Why the days are joined: day n's last line continues into day n + 1's first
    as neighbouring lines do, and not the other way round."""
    frame = load_google2011(shared_data)
    cpu = frame.pivot(index="timestamp", columns="pod", values="cpu")
    mean = cpu.mean()
    step = (cpu.diff().abs() / mean).to_numpy()
    times = pd.DatetimeIndex(cpu.index)
    midnight = np.asarray((times.hour == 0) & (times.minute == 0))
    inside = np.nanmedian(step[~midnight])
    across = np.nanmedian(step[midnight])
    day = pd.Timedelta(days=1)
    starts = cpu[midnight]
    next_end = cpu.shift(freq=-(2 * day - pd.Timedelta(minutes=5))).reindex(starts.index)
    backwards = np.nanmedian((starts - next_end).abs().to_numpy() / mean.to_numpy())
    assert across < 1.2 * inside < backwards / 2, (inside, across, backwards)


def test_google_units_match_a_raw_line(shared_data: Path) -> None:
    with tarfile.open(shared_data / "google-2011-jobs" / "GCD_VMs.tar.gz") as archive:
        member = archive.extractfile("GCD_VMs/vm_6127640366_9")
        assert member is not None
        lines = member.read().decode().splitlines()
    cpu_pct, memory_pct = (float(value) for value in lines[10].split())
    frame = load_google2011(shared_data)
    day_9 = GOOGLE2011_EPOCH + pd.Timedelta(days=8)
    row = at(frame, "job-6127640366", day_9 + pd.Timedelta(seconds=10 * 300))
    assert row["workload"] == "job-6127640366"
    assert row["cpu"] == pytest.approx(cpu_pct / 100.0)  # 100 % = 1 core
    assert row["memory"] == pytest.approx(memory_pct / 100.0 * 4 * GIB)  # 100 % = 4 GiB


def test_google_limit_takes_the_first_jobs(shared_data: Path) -> None:
    with tarfile.open(shared_data / "google-2011-jobs" / "GCD_VMs.tar.gz") as archive:
        names = [name.split("/")[-1] for name in archive.getnames() if "vm_" in name]
    jobs = sorted({int(name.split("_")[1]) for name in names})[:4]
    days = sum(int(name.split("_")[1]) in jobs for name in names)
    frame = load_google2011(shared_data, limit=4, cores_per_100pct=2.0, bytes_per_100pct=GIB)
    assert set(frame["pod"]) == {f"job-{job}" for job in jobs} and len(frame) == days * 288
    default_scale = load_google2011(shared_data, limit=4)
    assert np.allclose(frame["cpu"], 2 * default_scale["cpu"])
    assert np.allclose(frame["memory"], default_scale["memory"] / 4)


def test_google_cut_into_days_gives_back_its_files(shared_data: Path) -> None:
    """`--split 1d` recovers the one-day-per-file view: young containers."""
    frame = load_google2011(shared_data, limit=3)
    pieces, _ = split_series(frame, frame.iloc[:0], 86400)
    with tarfile.open(shared_data / "google-2011-jobs" / "GCD_VMs.tar.gz") as archive:
        names = [name for name in archive.getnames() if "vm_" in name]
        jobs = sorted({int(name.split("_")[-2]) for name in names})[:3]
        files = sorted(
            (job, int(n.split("_")[-1])) for n in names for job in jobs if f"_{job}_" in n
        )
        assert pieces["pod"].nunique() == len(files)
        job, day = files[-1]
        member = archive.extractfile(f"GCD_VMs/vm_{job}_{day}")
        assert member is not None
        raw = np.loadtxt(io.BytesIO(member.read()))
    days_of_job = [d for j, d in files if j == job]
    piece = pieces[pieces["pod"] == f"job-{job}-p{day - days_of_job[0]}"]
    assert piece["timestamp"].min() == GOOGLE2011_EPOCH + pd.Timedelta(
        days=min(d for _, d in files) - 1
    )
    assert np.allclose(piece["cpu"], raw[:, 0] / 100.0)


def fake_google(root: Path, files: dict[str, bytes]) -> Path:
    folder = root / "google-2011-jobs"
    folder.mkdir(parents=True)
    path = folder / "GCD_VMs.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(f"GCD_VMs/{name}")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return path


def test_google_bad_line_names_member_row_and_column(tmp_path: Path) -> None:
    path = fake_google(tmp_path, {"vm_1_1": b"10 20\n30 40\n", "vm_2_1": b"1 2\n3 x\n"})
    with pytest.raises(DataFormatError) as caught:
        load_google2011(tmp_path)
    assert (
        str(caught.value) == f"{path}:GCD_VMs/vm_2_1: row 2, column 'memory %': not a number: 'x'"
    )
    fake = tmp_path / "other"
    path = fake_google(fake, {"vm_1_1": b"10 20\n30\n"})
    with pytest.raises(DataFormatError, match=r"vm_1_1: row 2: expected 2 fields, found 1"):
        load_google2011(fake)


def test_an_unreadable_google_archive_is_named(tmp_path: Path) -> None:
    path = fake_google(tmp_path, {"vm_1_1": b"10 20\n"})
    path.write_bytes(b"not an archive")
    named = f"^{re.escape(str(path))}: cannot read it: not a gzip file"
    with pytest.raises(DataFormatError, match=named):
        load_google2011(tmp_path)


def test_google_small_archive_lays_days_end_to_end(tmp_path: Path) -> None:
    fake_google(tmp_path, {"vm_7_2": b"50 25\n100 50\n", "vm_7_4": b"1 1\n", "vm_8_1": b"2 2\n"})
    frame = load_google2011(tmp_path)
    assert frame["pod"].tolist() == ["job-7", "job-7", "job-7", "job-8"]
    assert frame["cpu"].tolist() == [0.5, 1.0, 0.01, 0.02]
    assert frame["memory"].tolist() == [GIB, 2 * GIB, 0.01 * 4 * GIB, 0.02 * 4 * GIB]
    day = pd.Timedelta(days=1)
    five = pd.Timedelta(minutes=5)
    assert frame["timestamp"].tolist() == [
        GOOGLE2011_EPOCH + day,  # day 2 of job 7
        GOOGLE2011_EPOCH + day + five,
        GOOGLE2011_EPOCH + 3 * day,  # day 4: day 3 is missing, a gap
        GOOGLE2011_EPOCH,  # day 1 of job 8
    ]


def test_a_google_day_longer_than_a_day_or_numbered_0_is_refused(tmp_path: Path) -> None:
    fake_google(tmp_path, {"vm_7_1": b"1 1\n" * 289})
    with pytest.raises(DataFormatError, match=r"vm_7_1: expected day 1 or later of at most 288"):
        load_google2011(tmp_path)
    other = tmp_path / "other"
    fake_google(other, {"vm_7_0": b"1 1\n"})
    with pytest.raises(DataFormatError, match=r"vm_7_0: expected day 1 or later"):
        load_google2011(other)


# --- dispatcher -----------------------------------------------------------------------------


def test_load_dataset_dispatches_and_passes_options(shared_data: Path) -> None:
    frame = load_dataset("google2011", shared_data, limit=2)
    assert frame["pod"].nunique() == 2
    with pytest.raises(ValueError, match="unknown dataset 'alibaba'"):
        load_dataset("alibaba", shared_data)
    with pytest.raises(FileNotFoundError, match=DATA_ENV):
        load_dataset("azure", shared_data / "missing")


def test_data_root_defaults_beside_the_repo_and_obeys_the_env(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(DATA_ENV, raising=False)
    assert default_data_root() == REPO_ROOT.parent / "shared" / "data"
    assert default_data_root().resolve() == shared_data.resolve()
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert default_data_root() == tmp_path
    fake_google(tmp_path, {"vm_3_1": b"10 10\n"})
    assert load_dataset("google2011")["pod"].tolist() == ["job-3"]


def test_limits_must_select_something(shared_data: Path) -> None:
    with pytest.raises(ValueError, match="limit must be at least 1"):
        load_google2011(shared_data, limit=0)
    with pytest.raises(ValueError, match="limit must be at least 1"):
        load_azure(shared_data, limit=-1)
