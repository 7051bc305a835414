"""MkDocs hook: the notebooks the build does not execute itself (mkdocs-jupyter's
`execute_ignore`: minutes of CPU each) are shown with the outputs `tests/notebooks` got.

Each time those tests run a notebook on its default input they write it, executed, to
build/executed-notebooks (tests/notebooks/running.py). Here such a copy replaces the
stored notebook when its cells are the stored ones, with a first cell saying when and on
which revision the tests ran it; without a copy, or with a stale one, the page shows the
notebook's code only and says so. So a site built after the tests (as CI builds it) shows
every notebook executed without running the two heavy ones twice.

Written by hand: mkdocs-jupyter either executes a notebook or shows what it stores, and
the notebooks are stored without outputs.
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[2]
EXECUTED = ROOT / "build" / "executed-notebooks"
# Rendered copies keep the path's last two parts (notebooks/NAME.ipynb), so that
# mkdocs-jupyter's execute_ignore patterns still match them and it does not run them.
SHOWN = ROOT / "build" / "docs-notebooks" / "notebooks"


def on_files(files: Any, config: Any) -> Any:
    ignored = config.plugins["mkdocs-jupyter"].config["execute_ignore"]
    for file in files:
        source = PurePath(file.abs_src_path)
        if source.suffix == ".ipynb" and any(source.match(pattern) for pattern in ignored):
            file.abs_src_path = str(shown_copy(Path(source)))
    return files


def shown_copy(stored: Path) -> Path:
    """The notebook to render in place of `stored`: the tests' executed copy with a note of
    when it ran, or the stored notebook with a note that its outputs are not shown."""
    notebook = nbformat.read(stored, as_version=4)
    executed = EXECUTED / stored.name
    copy = nbformat.read(executed, as_version=4) if executed.exists() else None
    if copy is not None and _cells(copy) == _cells(notebook):
        ran = copy.metadata.get("kube_tailor", {})
        note = (
            f"*Executed headless by `{ran.get('executed_by', 'tests/notebooks')}` on its "
            f"default input, {ran.get('executed_at', 'at an unrecorded time')}, revision "
            f"`{ran.get('revision', 'unknown')}`; the site's build does not run it again.*"
        )
        notebook = copy
    else:
        note = (
            "*Code only: this build found no executed copy of this notebook's current cells "
            "(`pytest tests/notebooks` writes one to build/executed-notebooks; build the site "
            "after it to see the outputs).*"
        )
    notebook.cells.insert(1, nbformat.v4.new_markdown_cell(note, id="how-it-ran"))
    SHOWN.mkdir(parents=True, exist_ok=True)
    shown = SHOWN / stored.name
    nbformat.write(notebook, shown)
    return shown


def _cells(notebook: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in notebook.cells]
