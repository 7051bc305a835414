"""`--output` of recommend / schedule / backtest: valid in its format, whole or not written."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tailor.cli.main import app
from tests.cli_text import plain
from tests.recommender.backtest.helpers import PER_DAY, history, write_usage

runner = CliRunner()
# names Kubernetes allows that YAML or CSV would read as something else (a number, a
# boolean, null) unless quoted; the history refuses a name Kubernetes could not hold
NAMES = [("007", "null", "yes"), ("1e3", "on", "true"), ("plain", "w", "no-memory")]


def _odd_names(tmp_path: Path) -> Path:
    """Three containers whose labels need quoting in CSV and YAML; one without memory."""
    start = pd.Timestamp("2024-01-01", tz="UTC")
    frames = [
        pd.DataFrame(
            {
                "timestamp": start + pd.to_timedelta(np.arange(600) * 5, unit="min"),
                "namespace": namespace,
                "workload": workload,
                "pod": "p",
                "container": container,
                "cpu": 0.1 + 0.01 * (np.arange(600) % 7),
                "memory": np.nan if container == "no-memory" else 1e8 + 1e6 * (np.arange(600) % 5),
            }
        )
        for namespace, workload, container in NAMES
    ]
    path = tmp_path / "odd.csv"
    pd.concat(frames).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("fmt", ["json", "yaml", "csv"])
def test_odd_names_round_trip_through_each_format(tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"out.{fmt}"
    args = ["recommend", "--input", str(_odd_names(tmp_path)), "--format", fmt]
    result = runner.invoke(app, [*args, "--output", str(target)])
    assert result.exit_code == 0, result.output
    text = target.read_text(encoding="utf-8")
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
    else:
        rows = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    found = {(row["namespace"], row["workload"], row["container"]) for row in rows}
    assert found == set(NAMES)


def test_a_name_kubernetes_cannot_hold_is_refused_with_its_row(tmp_path: Path) -> None:
    path = _odd_names(tmp_path)
    path.write_text(path.read_text().replace(",yes,", ',"a,b",', 1))
    result = runner.invoke(app, ["recommend", "--input", str(path)])
    assert result.exit_code == 2, result.output
    assert "row 1, column 'container': 'a,b' is not a Kubernetes container name" in plain(
        result.output
    )


@pytest.mark.parametrize("command", [["recommend"], ["schedule", "--format", "csv"]])
def test_a_full_disk_is_a_clear_error(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--demo", "--output", "/dev/full"])
    assert result.exit_code == 2, result.output
    assert "cannot write /dev/full: No space left on device" in plain(result.output)


def _fail_half_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes stop half way with a full disk, as a real one would."""
    real = Path.write_text

    def half(self: Path, data: str, *args: object, **kwargs: object) -> int:
        real(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half)


@pytest.mark.parametrize(
    "command", [["recommend", "--format", "json"], ["backtest", "--format", "json"]]
)
def test_a_failed_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    target = tmp_path / "out.json"
    target.write_text("old\n")
    _fail_half_way(monkeypatch)
    extra = ["--strategies", "krr", "--no-progress"] if command[0] == "backtest" else []
    result = runner.invoke(app, [*command, *extra, "--input", str(usage), "--output", str(target)])
    assert result.exit_code == 2, result.output
    assert "No space left on device" in plain(result.output)
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


@pytest.mark.parametrize(
    ("command", "name", "first"),
    [
        (["recommend"], "plan.json", "["),
        (["recommend"], "plan.YAML", "- namespace"),
        (["schedule"], "plan.json", "["),
        (["schedule"], "plan.csv", "namespace,"),
        (["schedule"], "plan.txt", " "),
        (["backtest", "--strategies", "krr", "--no-progress"], "result.json", "{"),
    ],
)
def test_without_format_the_suffix_names_it(
    tmp_path: Path, command: list[str], name: str, first: str
) -> None:
    """`schedule -o plan.json` wrote a rich table into plan.json."""
    usage = write_usage(tmp_path, history(np.full(2 * PER_DAY, 0.5)))
    target = tmp_path / name
    result = runner.invoke(app, [*command, "--input", str(usage), "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8").startswith(first)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["recommend", "--output", "o.xyz"], "o.xyz: unknown suffix '.xyz'"),
        (["recommend", "--format", "csv", "--output", "o.json"], "o.json is a .json file, but"),
        (["schedule", "-o", "plan.json", "--format", "table"], "--format is table"),
        (["schedule", "-o", "plan.yaml"], "unknown suffix '.yaml'; use .txt, .json, .csv"),
        (["backtest", "--output", "r.csv"], "unknown suffix '.csv'; use .txt, .json"),
        (["backtest", "--report", "r.pdf"], "r.pdf: the report is HTML"),
        (["recommend", "--output", ""], "an empty file name"),  # was ". is a folder"
        (["backtest", "--per-container", ""], "an empty file name"),
    ],
)
def test_a_suffix_that_names_another_format_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*args, "--demo"])
    assert result.exit_code == 2, result.output
    assert message in plain(result.output)
    assert list(tmp_path.iterdir()) == []  # refused before any work, nothing written
