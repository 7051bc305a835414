"""A shared dataset folder that is incomplete or holds malformed files: exit 2, no traceback.

`load_history` let the loaders' ValueError (and pandas', gzip's and tarfile's own errors)
through as tracebacks; `$KUBE_TAILOR_DATA` points at such a folder easily.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailor.cli.main import app
from tests.cli_text import plain


def write(root: Path, relative: str, content: bytes | None) -> None:
    """A file of `content` under `root` (None: only its folder)."""
    path = root / relative
    path.parent.mkdir(parents=True)
    if content is not None:
        path.write_bytes(content)


SEVEN_COLUMNS = b"a;b;c;d;e;f;g\n" + b"1;2;3;4;5;6;7\n" * 50_000
BITBRAINS = "bitbrains-rnd/2013-9/1.csv.gz"
CASES = {  # dataset, file written, its content, the message
    "empty month": ("bitbrains", BITBRAINS, None, "no Bitbrains files selected"),
    "missing month": ("bitbrains", "bitbrains-rnd/x", None, "no such Bitbrains month folder"),
    "empty file": ("bitbrains", BITBRAINS, gzip.compress(b""), "No columns to parse from file"),
    "too few columns": ("bitbrains", BITBRAINS, gzip.compress(b"a;b\n1;2\n"), "Usecols do not"),
    "truncated gzip": (
        "bitbrains",
        BITBRAINS,
        gzip.compress(SEVEN_COLUMNS)[:-10],
        "Compressed file ended",
    ),
    "empty azure file": (
        "azure",
        "azure-v1-cpu/microsoft_avg_100.csv.gz",
        gzip.compress(b""),
        "No columns to parse from file",
    ),
    "google archive not a tar": (
        "google2011",
        "google-2011-jobs/GCD_VMs.tar.gz",
        b"not an archive",
        "cannot read it: not a gzip file",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_broken_dataset_folder_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    dataset, relative, content, message = CASES[case]
    write(tmp_path, relative, content)
    monkeypatch.setenv("KUBE_TAILOR_DATA", str(tmp_path))
    months = ["--months", "2013-9"] if dataset == "bitbrains" else []
    result = CliRunner().invoke(app, ["backtest", "--dataset", dataset, *months, "--no-progress"])
    assert result.exit_code == 2, result.output  # a usage error, not a traceback
    assert message in plain(result.output)


@pytest.mark.parametrize("command", ["backtest", "hindsight"])
def test_an_unknown_dataset_is_named_before_its_flags(command: str) -> None:
    """`--dataset Bitbrains --months 2013-9` said --months goes with bitbrains."""
    args = [command, "--dataset", "Bitbrains", "--months", "2013-9"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "unknown dataset 'Bitbrains'; choose one of bitbrains, azure, google2011" in plain(
        result.output
    )
