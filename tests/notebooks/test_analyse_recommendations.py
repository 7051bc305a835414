"""The recommendations notebook on its default input (the demo fleet): its figures, its
explanations, and savings totals that are the CLI's own for the same history."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from tailor.cli.main import app
from tests.notebooks.running import HANG_GUARD, execute, images, markdown, tagged

TOTALS = """
import json
print(json.dumps({
    model: {name: float(value) for name, value in savings.loc["total", model].items()}
    for model in ("vpa", "forecast")
}))
"""
CHOSEN = "import json; print(json.dumps([list(keys) for keys in chosen]))"


def cli_summary(model: str) -> dict[str, Any]:
    """The total of `tailor recommend --demo --format json --summary --strategy MODEL`: its
    second JSON document."""
    flags = ["recommend", "--demo", "--format", "json", "--summary", "--strategy", model]
    result = CliRunner().invoke(app, flags)
    assert result.exit_code == 0, result.output
    decoder = json.JSONDecoder()
    rows, end = decoder.raw_decode(result.stdout)
    summary, _ = decoder.raw_decode(result.stdout[end:].lstrip())
    assert len(rows) == 7
    total: dict[str, Any] = summary["summary"]["total"]
    return total


pytestmark = HANG_GUARD


@pytest.fixture(scope="module")
def ran() -> tuple[Any, list[Any]]:
    return execute("analyse_recommendations.ipynb", TOTALS, CHOSEN)


def test_its_savings_totals_are_the_cli_totals_on_the_same_history(
    ran: tuple[Any, list[Any]],
) -> None:
    _, (totals, _) = ran
    for model in ("vpa", "forecast"):
        mine, cli = totals[model], cli_summary(model)
        assert mine["containers"] == cli["containers"] == 7 and mine["known"] == cli["known"]
        for resource, name in (("cpu", "cpu"), ("memory", "memoryGiB")):
            assert mine[f"{resource}_now"] == pytest.approx(cli[name]["now"], rel=1e-9)
            assert mine[f"{resource}_after"] == pytest.approx(cli[name]["recommended"], rel=1e-9)
        assert mine["cost_now"] == pytest.approx(cli["costPerMonth"]["now"], rel=1e-9)
        assert mine["saving"] == pytest.approx(cli["savingPerMonth"], rel=1e-9, abs=1e-9)
    # the demo fleet's manifests over its pods (web runs two), known to both models alike
    assert totals["vpa"]["cpu_now"] == pytest.approx(2 * (1.0 + 0.1) + 0.5 + 2.0 + 0.25 + 0.2 + 1.0)
    assert totals["forecast"]["cpu_now"] == totals["vpa"]["cpu_now"]


def test_it_draws_the_savings_every_chosen_workload_and_the_what_if(
    ran: tuple[Any, list[Any]],
) -> None:
    notebook, (_, chosen) = ran
    assert images(tagged(notebook, "savings")) == 1
    workloads = tagged(notebook, "workloads")
    assert len(chosen) == 3 and images(workloads) == 3
    explained = markdown(workloads)
    assert len(explained) == 3
    for keys, text in zip(chosen, explained, strict=True):
        assert "/".join(keys) in text
        assert "`vpa` cpu: target" in text and "`forecast` memory: target" in text
    # the leaking ledger is among the largest changes, its kills explained
    assert ["demo", "ledger", "app"] in chosen
    assert any("3 OOM kill(s)" in text for text in explained)
    assert images(tagged(notebook, "what-if")) == 1
