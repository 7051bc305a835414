"""The analysis notebook runs top to bottom on the real traces, and its text still holds."""

from __future__ import annotations

import re

import nbformat
import pytest

from tests.notebooks.running import HANG_GUARD, execute


def _outputs(notebook: nbformat.NotebookNode) -> list[str]:
    """The text every code cell printed or returned, one string per cell."""
    texts = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        parts = [o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs]
        texts.append("\n".join(parts))
    return texts


def _numbers(pattern: str, text: str) -> list[float]:
    return [float(value) for value in re.findall(pattern, text, re.MULTILINE)]


@HANG_GUARD
def test_the_forecast_analysis_notebook_runs_and_says_what_its_text_says() -> None:
    notebook, _ = execute("forecast_analysis.ipynb")  # raises on the first cell that fails
    outputs = _outputs(notebook)
    text = "\n".join(outputs)
    # an optimised per-series statsmodels fit beats the fixed smoothing candidates in sample
    vectorised = _numbers(r"vectorised alpha=[\d.]+: MAE ([\d.]+)", text)
    optimised = _numbers(r"statsmodels optimised \(alpha=[\d.]+\): MAE ([\d.]+)", text)
    assert len(vectorised) == 4 and len(optimised) == 1
    assert optimised[0] < min(vectorised)
    # following the lulls of the batch VM leaves less slack than the upstream VPA
    vpa, forecast = (_numbers(rf"^{name}\s+([\d.]+)$", text) for name in ("vpa", "forecast"))
    assert len(vpa) == 1 and len(forecast) == 1 and forecast[0] < vpa[0]
    # a finer level-clairvoyant block leaves less slack at the same shortfall
    four, one = (_numbers(rf"{h} h blocks: slack ([\d.]+)", text) for h in (4, 1))
    assert one[0] < four[0]
    # knowing every window of a block leaves less than knowing its mean and spread
    best = _numbers(r"best flat blocks: slack ([\d.]+)", text)
    assert len(best) == 2 and best[0] < four[0] and best[1] < one[0]
    # handing forecast the true hourly means moves its slack little, at no more shortfall
    (blind_slack, blind_short), (perfect_slack, perfect_short) = (
        map(float, re.findall(rf"^{name}: slack ([\d.]+) at shortfall ([\d.]+)$", text, re.M)[0])
        for name in ("forecast", "forecast-perfect")
    )
    assert perfect_slack == pytest.approx(blind_slack, rel=0.1)
    assert perfect_short <= 1.1 * blind_short
    # the young-container table has a row for every evaluated hour, for both strategies
    table = outputs[-1]
    assert "forecast" in table and "vpa" in table
    assert all(re.search(rf"^{hour}\s", table, re.MULTILINE) for hour in range(6, 24))
