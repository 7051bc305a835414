"""The architecture page says what the import contracts check: every contract by the name
`lint-imports` prints, and every module its layers name, so page and contracts move together."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text()
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]


def test_the_page_names_every_contract() -> None:
    assert len(CONTRACTS) >= 4
    for contract in CONTRACTS:
        assert f"| {contract['name']} |" in PAGE, contract["name"]


def test_the_page_names_every_module_of_the_layers_and_every_edge() -> None:
    for contract in CONTRACTS:
        if contract.get("containers"):  # layers inside one package: the table says them
            continue
        layers = [m for layer in contract.get("layers", []) for m in re.split(r"[|:]", layer)]
        for module in (m.strip() for m in [*layers, *contract.get("allowed_importers", [])]):
            short = module.removeprefix("recommender.").removeprefix("admission.")
            assert f"`{module}`" in PAGE or f"`{short}`" in PAGE, module
