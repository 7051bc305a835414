"""The recommendations notebook on its default input (the demo fleet): its figures, its
explanations, and savings totals that are the CLI's own for the same history."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from tailor.cli.main import app
from tests.notebooks.running import execute, images, markdown, tagged

GIB = 2.0**30
TOTALS = """
import json
print(json.dumps({
    f"{resource}:{name}": float(savings.loc["all", (resource, name)])
    for resource in ("cpu", "memory_gib") for name in ("now", "vpa", "forecast")
}))
"""
CHOSEN = "import json; print(json.dumps([list(keys) for keys in chosen]))"


def cli_records(*flags: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(app, ["recommend", "--demo", "--format", "json", *flags])
    assert result.exit_code == 0, result.output
    records: list[dict[str, Any]] = json.loads(result.stdout)
    return records


@pytest.fixture(scope="module")
def ran() -> tuple[Any, list[Any]]:
    return execute("analyse_recommendations.ipynb", TOTALS, CHOSEN)


def test_its_savings_totals_are_the_cli_totals_on_the_same_history(
    ran: tuple[Any, list[Any]],
) -> None:
    _, (totals, _) = ran
    for model in ("vpa", "forecast"):
        records = cli_records("--strategy", model)
        cpu = sum(record["cpu"]["target"] for record in records)
        memory = sum(record["memory"]["target"] for record in records) / GIB
        assert totals[f"cpu:{model}"] == pytest.approx(cpu, rel=1e-12)
        assert totals[f"memory_gib:{model}"] == pytest.approx(memory, rel=1e-12)
    # the demo fleet's manifests: one pod's requests per workload container (web's two
    # pods share a spec)
    assert totals["cpu:now"] == pytest.approx((1.0 + 0.1) + 0.5 + 2.0 + 0.25 + 0.2 + 1.0)
    assert totals["memory_gib:now"] == pytest.approx(
        (768 + 64 + 1536 + 3072 + 512 + 256 + 3072) / 1024
    )


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
