"""Run a notebook headless as a user would (nbclient, its own kernel) and read what it made."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"
CELL_TIMEOUT = 600  # seconds: a hung cell fails the test instead of hanging CI
# A whole notebook's guard against a hang, not a speed goal (benchmarks/bench_notebooks.py
# measures that): on a 2-core host shared by other builds one took 691 s, past pytest's 600.
HANG_GUARD = pytest.mark.timeout(2400)
# Each notebook as executed here on its default input: the docs site shows these copies of
# the notebooks its build does not run itself (docs/hooks/notebooks.py).
EXECUTED = NOTEBOOKS.parent / "build" / "executed-notebooks"


def execute(
    name: str, *probes: str, parameters: str | None = None
) -> tuple[nbformat.NotebookNode, list[Any]]:
    """The executed notebook `name`, and what each probe printed as JSON: a probe is code
    run after the notebook's last cell, in its kernel, printing one JSON document (the
    last line of its standard output), so a test asserts on the notebook's own variables
    without the stored notebook printing them for it. `parameters`: code run right after
    the cell tagged `parameters`, as a user sets them (papermill's convention)."""
    path = NOTEBOOKS / name
    notebook = nbformat.read(path, as_version=4)
    if parameters is not None:
        index = notebook.cells.index(tagged(notebook, "parameters"))
        notebook.cells.insert(index + 1, nbformat.v4.new_code_cell(parameters))
    stored = len(notebook.cells)
    notebook.cells.extend(nbformat.v4.new_code_cell(probe) for probe in probes)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError on the first cell that fails
    answers = [json.loads(_text(cell).splitlines()[-1]) for cell in notebook.cells[stored:]]
    del notebook.cells[stored:]
    if parameters is None:
        keep_executed(name, notebook)
    return notebook, answers


def keep_executed(name: str, notebook: nbformat.NotebookNode) -> None:
    """Write the executed notebook to EXECUTED, saying when and on which revision it ran
    (written whole, then renamed: a docs build reading it never sees half of it)."""
    notebook.metadata["kube_tailor"] = {
        "executed_by": "tests/notebooks",
        "executed_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "revision": _revision(),
    }
    EXECUTED.mkdir(parents=True, exist_ok=True)
    partial = EXECUTED / f".{name}.partial"
    nbformat.write(notebook, partial)
    partial.replace(EXECUTED / name)


def _revision() -> str:
    """The checkout's commit, "-dirty" when files differ from it; "unknown" outside git."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=NOTEBOOKS.parent, capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return described.stdout.strip()


def rerun(name: str, parameters: str, through: str) -> str:
    """Code for a probe that runs the notebook `name` again in the kernel that just ran it,
    from its parameter cell through the cell tagged `through`, with `parameters` set as
    `execute` sets them: a second source read without a second kernel and its imports.
    The probe's JSON is the last line it prints."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    start = notebook.cells.index(tagged(notebook, "parameters"))
    end = notebook.cells.index(tagged(notebook, through))
    code = [cell.source for cell in notebook.cells[start : end + 1] if cell.cell_type == "code"]
    return "\n".join([code[0], parameters, *code[1:]])


def _text(cell: nbformat.NotebookNode) -> str:
    """What the cell printed on its standard output."""
    printed = (output for output in cell.outputs if output.get("name") == "stdout")
    return "".join(output.get("text", "") for output in printed)


def tagged(notebook: nbformat.NotebookNode, tag: str) -> nbformat.NotebookNode:
    """The one code cell tagged `tag`."""
    cells = [cell for cell in notebook.cells if tag in cell.metadata.get("tags", [])]
    assert len(cells) == 1, f"{len(cells)} cells tagged {tag!r}"
    return cells[0]


def images(cell: nbformat.NotebookNode) -> int:
    """PNG figures the cell displayed."""
    return sum("image/png" in output.get("data", {}) for output in cell.outputs)


def markdown(cell: nbformat.NotebookNode) -> list[str]:
    """Markdown the cell displayed."""
    return [
        output["data"]["text/markdown"]
        for output in cell.outputs
        if "text/markdown" in output.get("data", {})
    ]
