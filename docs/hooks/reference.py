"""MkDocs hook: the command-line and settings references, generated from the code at build
time so that no page hand-copies a flag or a setting (a renamed one changes the page; a
placeholder naming something gone fails the build).

Placeholders in a page's markdown:
- ``<!-- cli-reference -->``: every ``tailor`` command, from the typer app's click tree;
- ``<!-- settings: package.module:Class -->``: a table of a settings class's fields
  (dataclass or pydantic model), nested groups as dotted names, with the comment that
  documents each field in the source.

Written by hand: mkdocs-click renders a click command it imports by attribute, while typer
builds that command on demand, and no plugin renders dataclass fields with their comments.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any

import typer.main

PLACEHOLDER = re.compile(r"<!-- (cli-reference|settings: ([\w.]+):(\w+)) -->")


def on_page_markdown(markdown: str, **_: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(1) == "cli-reference":
            return cli_reference()
        return settings_table(match.group(2), match.group(3))

    return PLACEHOLDER.sub(replace, markdown)


def cli_reference() -> str:
    from tailor.cli.main import app

    root: Any = typer.main.get_command(app)  # typer's vendored click: a Group, duck-typed
    context = root.make_context("tailor", [], resilient_parsing=True)
    sections = []
    for name in sorted(root.list_commands(context)):
        command = root.get_command(context, name)
        if command is None or command.hidden:
            continue
        sections.append(_command_section(name, command, context))
    return "\n".join(sections)


def _command_section(name: str, command: Any, parent: Any) -> str:
    context = command.make_context(name, [], parent=parent, resilient_parsing=True)
    usage = " ".join(command.collect_usage_pieces(context))
    help_text = inspect.cleandoc(command.help or "").split("\n\n")[0]
    lines = [
        f"## `tailor {name}`",
        "",
        _plain(help_text),
        "",
        f"```\ntailor {name} {usage}\n```",
        "",
    ]
    rows = [_option_row(p) for p in command.params if not getattr(p, "hidden", False)]
    if rows:
        lines += ["| option | meaning | default |", "|---|---|---|", *rows, ""]
    return "\n".join(lines)


def _option_row(param: Any) -> str:
    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    if param.param_type_name == "argument":
        names = f"`{param.human_readable_name}` (argument)"
    meaning = _plain(getattr(param, "help", None) or "")
    default = param.default
    shown = "" if default is None or default is False or callable(default) else f"`{default}`"
    return f"| {names} | {meaning} | {shown} |"


def _plain(text: str) -> str:
    """Help text as one table-safe line (typer's rich markup and pipes removed)."""
    text = re.sub(r"\[/?(bold|italic|dim|red|green|yellow|cyan|magenta|blue)\]", "", text)
    return " ".join(text.split()).replace("|", "\\|")


def settings_table(module_name: str, class_name: str) -> str:
    cls = getattr(importlib.import_module(module_name), class_name)
    rows = ["| setting | type | default | meaning |", "|---|---|---|---|"]
    rows += _settings_rows(cls, prefix="")
    return "\n".join(rows) + "\n"


def _settings_rows(cls: type, prefix: str) -> list[str]:
    comments = _field_comments(cls)
    rows = []
    for name, annotation, default in _fields(cls):
        nested = dataclasses.is_dataclass(default) or hasattr(type(default), "model_fields")
        if nested:
            rows += _settings_rows(type(default), prefix=f"{prefix}{name}.")
            continue
        kind = _plain(str(annotation)).replace("`", "")
        shown = "required" if repr(default) == "PydanticUndefined" else f"`{default!r}`"
        meaning = _plain(comments.get(name, ""))
        rows.append(f"| `{prefix}{name}` | {kind} | {shown} | {meaning} |")
    return rows


def _fields(cls: type) -> list[tuple[str, Any, Any]]:
    if dataclasses.is_dataclass(cls):
        found = []
        for field in dataclasses.fields(cls):
            if field.default is not dataclasses.MISSING:
                default = field.default
            elif field.default_factory is not dataclasses.MISSING:
                default = field.default_factory()
            else:
                default = None
            found.append((field.name, field.type, default))
        return found
    model_fields = getattr(cls, "model_fields", None)
    if model_fields is None:
        raise TypeError(f"{cls.__name__} is neither a dataclass nor a pydantic model")
    return [
        (
            name,
            info.annotation.__name__ if hasattr(info.annotation, "__name__") else info.annotation,
            info.get_default(call_default_factory=True),
        )
        for name, info in model_fields.items()
    ]


def _field_comments(cls: type) -> dict[str, str]:
    """Each field's documenting comments: the lines of comment just above it and the one
    trailing it, or a pydantic field's description."""
    comments = _docstring_entries(cls)
    for name, info in (getattr(cls, "model_fields", None) or {}).items():
        if info.description:
            comments[name] = info.description
    above: list[str] = []
    for line in inspect.getsource(cls).splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("# "))
            continue
        field = re.match(r"(\w+)\s*:[^=#]+(?:=[^#]*)?(?:#\s*(.*))?$", stripped)
        if field and field.group(1) in _names(cls):
            text = " ".join([*above, field.group(2) or ""]).strip()
            comments.setdefault(field.group(1), text)
        above = []
    return comments


def _docstring_entries(cls: type) -> dict[str, str]:
    """Fields the class docstring describes as `name: text` (or `a, b: text`), with the
    more indented lines that continue the text."""
    names = _names(cls)
    entries: dict[str, str] = {}
    current: list[str] = []
    indent = 0
    for line in inspect.cleandoc(cls.__doc__ or "").splitlines():
        entry = re.match(r"(\s*)([a-z_][\w, ]*):\s+(.*)$", line)
        named = [n.strip() for n in entry.group(2).split(",")] if entry else []
        if entry and named and set(named) <= names:
            current, indent = named, len(entry.group(1))
            for name in named:
                entries[name] = entry.group(3)
        elif current and line.strip() and len(line) - len(line.lstrip()) > indent:
            for name in current:
                entries[name] += " " + line.strip()
        else:
            current = []
    return entries


def _names(cls: type) -> set[str]:
    return {name for name, _, _ in _fields(cls)}
