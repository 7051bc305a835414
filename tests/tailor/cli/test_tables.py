"""Tables printed outside a terminal keep every cell whole (not cut to 80 columns)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.table import Table
from typer.testing import CliRunner

from recommender.data.synthetic import demo_fleet
from tailor.cli.main import app
from tailor.cli.tables import NARROWEST, natural_width, print_table, table_text

runner = CliRunner()


def wide_table() -> Table:
    table = Table(title="wide")
    for index in range(9):
        table.add_column(f"a column header number {index}")
    table.add_row(*[f"a-long-cell-value-{index}" for index in range(9)])
    return table


def test_a_piped_table_is_printed_at_its_natural_width() -> None:
    buffer = io.StringIO()
    print_table(wide_table(), buffer)
    text = buffer.getvalue()
    assert "…" not in text
    for index in range(9):
        assert f"a column header number {index}" in text
        assert f"a-long-cell-value-{index}" in text
    assert max(len(line) for line in text.splitlines()) == natural_width(wide_table())
    assert natural_width(wide_table()) > 200


def test_a_small_table_still_takes_a_normal_line() -> None:
    table = Table()
    table.add_column("x")
    table.add_row("1")
    assert natural_width(table) == NARROWEST
    assert "x" in table_text(table)


def test_the_demo_table_names_every_workload_in_full() -> None:
    result = runner.invoke(app, ["recommend", "--demo"])
    assert result.exit_code == 0, result.output
    usage, _ = demo_fleet()
    assert "…" not in result.stdout
    for workload in usage.workload.unique():
        assert f" {workload} " in result.stdout
    assert "severity" in result.stdout  # the current beside the recommendation


def test_a_table_written_to_a_file_is_the_one_printed(tmp_path: Path) -> None:
    target = tmp_path / "recommendations.txt"
    result = runner.invoke(app, ["recommend", "--demo", "--output", str(target)])
    assert result.exit_code == 0, result.output
    written = target.read_text()
    printed = runner.invoke(app, ["recommend", "--demo"]).stdout
    assert written.split() == printed.split()
    assert "kube-tailor recommendations" in written
