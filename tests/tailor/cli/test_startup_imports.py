"""`tailor` starts without importing what the command does not use (issue 39, fast start).

Each case runs the real entry point in a fresh interpreter and reads `sys.modules`
when the command has finished: the heavy libraries must not be among them.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tailor.cli.main import COMMANDS, load_command

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("sklearn", "scipy", "statsmodels", "matplotlib", "kubernetes", "pyarrow", "dask", "numba")

PROBE = """
import json, sys
from typer.main import get_command
from tailor.cli.main import app
try:
    get_command(app).main(sys.argv[2:], prog_name="tailor")
except SystemExit:
    pass
heavy = json.loads(sys.argv[1])
with open("{out}", "w") as out:
    json.dump(sorted(name for name in heavy if name in sys.modules), out)
"""


def loaded_heavy(arguments: list[str], tmp_path: Path) -> list[str]:
    """The HEAVY modules (and pandas) a fresh `tailor ARGUMENTS` process imported."""
    out = tmp_path / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE.format(out=out),
            json.dumps([*HEAVY, "pandas"]),
            *arguments,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.exists(), done.stderr
    return list(json.loads(out.read_text()))


@pytest.mark.parametrize("arguments", [["--help"], ["--version"], []])
def test_help_and_version_import_no_heavy_library(arguments: list[str], tmp_path: Path) -> None:
    assert loaded_heavy(arguments, tmp_path) == []


def test_recommend_demo_imports_neither_the_forecaster_nor_the_cluster_client(
    tmp_path: Path,
) -> None:
    """pandas imports pyarrow wherever it is installed: the demo fleet, built in memory,
    imports pandas without it (`without_pyarrow`)."""
    loaded = loaded_heavy(["recommend", "--demo", "--format", "json"], tmp_path)
    assert "pandas" in loaded  # the probe works: the command did run
    assert [name for name in loaded if name != "pandas"] == []


def test_follow_starts_without_pandas_or_the_forecaster(tmp_path: Path) -> None:
    """`tailor follow` reads a schedule and talks to the cluster: it loads the Kubernetes
    client, but neither pandas nor the forecaster of the commands that read history."""
    loaded = loaded_heavy(["follow", "--help"], tmp_path)
    assert "kubernetes" in loaded  # the probe works: the command was loaded
    assert [name for name in loaded if name != "kubernetes"] == []


def test_a_command_reading_a_file_still_gets_pyarrow(tmp_path: Path) -> None:
    """The demo's shortcut stays the demo's: a Parquet history is read with pyarrow."""
    from recommender.data.files import write_usage
    from recommender.data.synthetic import demo_fleet

    usage, _ = demo_fleet(days=2)
    source = tmp_path / "usage.parquet"
    write_usage(usage, source)
    loaded = loaded_heavy(["recommend", "--input", str(source), "--format", "json"], tmp_path)
    assert "pandas" in loaded and "pyarrow" in loaded


def test_the_listing_matches_each_command_once_loaded() -> None:
    """The one-line help `tailor --help` shows without loading a command is that
    command's own (its docstring's first line)."""
    for name, where in COMMANDS.items():
        command = load_command(name)
        assert command.name == name
        function = getattr(sys.modules[where.module], where.function)
        first_line = inspect.getdoc(function).splitlines()[0]  # type: ignore[union-attr]
        assert where.summary == first_line, name
