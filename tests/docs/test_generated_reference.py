"""The manual's generated references: every command of the program and every placeholder a
page holds resolve, so the pages follow the code instead of copying it."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer.main

from tailor.cli.main import app

DOCS = Path(__file__).resolve().parents[2] / "docs"


def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_reference_hook", DOCS / "hooks" / "reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_command_and_each_of_its_options_is_in_the_cli_reference() -> None:
    text = hook().cli_reference()
    root: Any = typer.main.get_command(app)  # a group: typer's vendored click, duck-typed
    context = root.make_context("tailor", [], resilient_parsing=True)
    for name in root.list_commands(context):
        command = root.get_command(context, name)
        assert f"## `tailor {name}`" in text
        for param in command.params:
            for option in param.opts:
                if option.startswith("-"):
                    assert f"`{option}`" in text, (name, option)


def test_every_settings_placeholder_renders_each_field() -> None:
    reference = hook()
    placeholders = [
        match
        for page in DOCS.rglob("*.md")
        for match in reference.PLACEHOLDER.finditer(page.read_text())
        if match.group(2)
    ]
    assert len(placeholders) >= 4
    for match in placeholders:
        table = reference.settings_table(match.group(2), match.group(3))
        cls = getattr(importlib.import_module(match.group(2)), match.group(3))
        for name, _, _ in reference._fields(cls):
            assert re.search(rf"\| `({name}|{name}\.[\w.]+)` \|", table), (match.group(3), name)


def test_a_placeholder_naming_a_missing_class_fails_the_build() -> None:
    page = "<!-- settings: recommender.vpa.settings:NoSuchSettings -->"
    with pytest.raises(AttributeError, match="NoSuchSettings"):
        hook().on_page_markdown(page)
