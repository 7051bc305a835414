"""Strategy settings from NAME=VALUE text, as command lines and config files give them.

Every knob of a settings dataclass (`ForecastSettings`, the baselines' settings)
or frozen pydantic model (the Prometheus source's `QueryNames`) can be set by
name (`target_cpu_shortfall=0.01`), and a knob of a group by its dotted name
(`lulls.follow=false`). Values are read by the field's declared type, and the
result goes through the same checks as settings built in code, so a typo or an
out-of-range value is an error that names the setting, never a silently ignored
flag.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

Settings = TypeVar("Settings")


class SettingsError(ValueError):
    """A setting that names nothing, cannot be read, or is out of range."""


def require(checks: list[tuple[bool, str]], error: type[SettingsError] = SettingsError) -> None:
    """Raise `error` with the message of the first failed check (settings validation)."""
    for ok, message in checks:
        if not ok:
            raise error(message)


def within(bounds: str | tuple[str, ...]) -> dict[str, Any]:
    """Field metadata declaring a setting's valid range once, for `Checked`: an interval
    ("[0, 1)", "(0, inf)": an upper inf is no bound; a bound may name another field) or a
    tuple of choices. A tuple value must be non-empty with every item within."""
    return {"within": bounds}


UNIT = within("[0, 1]")
NON_NEGATIVE = within("[0, inf)")
POSITIVE = within("(0, inf)")
AT_LEAST_ONE = within("[1, inf)")


def _within(settings: Any, name: str, bounds: str | tuple[str, ...]) -> tuple[bool, str]:
    """Whether field `name` lies within `bounds` (see `within`), and the message if not."""
    value = getattr(settings, name)
    if isinstance(bounds, tuple):
        return value in bounds, f"{name} must be one of {', '.join(bounds)}"
    low, high = (part.strip() for part in bounds[1:-1].split(","))
    lower, upper = (float(getattr(settings, b, b)) for b in (low, high))
    items = value if isinstance(value, tuple) else (value,)
    ok = len(items) > 0 and all(
        (v >= lower if bounds[0] == "[" else v > lower)
        and (high == "inf" or (v <= upper if bounds[-1] == "]" else v < upper))
        for v in items
    )
    if isinstance(value, tuple):
        return ok, f"{name} must be non-empty values in {bounds}"
    if high != "inf":
        return ok, f"{name} must be in {bounds}"
    said = {"[0": "cannot be negative", "(0": "must be positive"}.get(bounds[0] + low)
    return ok, f"{name} {said or f'must be at least {low}'}"


class Checked:
    """A settings dataclass checked when built, each field against the range its metadata
    declares (`within`): a range is written once, beside its field, and the message says
    it. `ERROR` is what a failed check raises; `GROUP` prefixes the messages with a
    group's dotted name."""

    GROUP: typing.ClassVar[str] = ""
    ERROR: typing.ClassVar[type[SettingsError]] = SettingsError

    def checks(self) -> list[tuple[bool, str]]:
        fields = dataclasses.fields(typing.cast(Any, self))
        return [_within(self, f.name, f.metadata["within"]) for f in fields if f.metadata]

    def __post_init__(self) -> None:
        require([(ok, self.GROUP + said) for ok, said in self.checks()], self.ERROR)


TRUE = ("true", "yes", "on", "1")
FALSE = ("false", "no", "off", "0")


def _convert(name: str, kind: Any, text: str) -> Any:
    """`text` as a value of the declared type `kind`."""
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if text.lower() in ("", "none", "null"):
            return None  # an optional setting back to its default
        [inner] = [arg for arg in args if arg is not type(None)]
        return _convert(name, inner, text)
    try:
        if kind is str:
            return text
        if kind is bool:
            lowered = text.lower()
            if lowered not in TRUE + FALSE:
                raise ValueError("expected true or false")
            return lowered in TRUE
        if kind is int:
            return int(text)
        if kind is float:
            value = float(text)
            if not math.isfinite(value):  # `x >= 0` checks let inf through, and nan reads oddly
                raise ValueError("expected a finite number")
            return value
        if origin is typing.Literal:
            choices = typing.get_args(kind)
            if text not in choices:
                raise ValueError(f"expected one of {', '.join(map(str, choices))}")
            return text
        if origin is tuple:
            item = typing.get_args(kind)[0]
            return tuple(_convert(name, item, part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise SettingsError(f"setting {name}: cannot read {text!r} ({error})") from None
    raise SettingsError(f"setting {name} cannot be set from text")


def _is_group(kind: Any) -> bool:
    """A field holding settings of its own (a dataclass or pydantic model)."""
    return dataclasses.is_dataclass(kind) or (
        isinstance(kind, type) and issubclass(kind, BaseModel)
    )


def _fields(cls: type) -> dict[str, Any]:
    """Declared type of every field of the settings dataclass or pydantic model `cls`."""
    if issubclass(cls, BaseModel):
        return {name: field.annotation for name, field in cls.model_fields.items()}
    hints = typing.get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(typing.cast(Any, cls))}


def _replace(base: Any, values: dict[str, Any], what: str, group: str = "") -> Any:
    """`base` with `values`, through the same validation as settings built in code."""
    if not isinstance(base, BaseModel):
        return dataclasses.replace(base, **values)
    try:
        return type(base)(**{**dict(base), **values})
    except ValidationError as error:
        raise SettingsError(validation_text(error, f"{what} setting", group)) from None


def validation_text(error: ValidationError, prefix: str = "", group: str = "") -> str:
    """Pydantic's complaints without its banner, input dump and documentation links; with a
    `prefix`, each names its field (dotted under `group`)."""

    def said(item: Any) -> str:
        message = str(item["msg"]).removeprefix("Value error, ")
        if not prefix:
            return message
        field = ".".join(str(part) for part in (*group.split("."), *item["loc"]) if part != "")
        return f"{prefix} {field}: {message}"

    return "; ".join(said(item) for item in error.errors())


def _setting_types(cls: type) -> dict[str, Any]:
    """Every settable name (dotted inside a group) and the type its value is read as."""
    types: dict[str, Any] = {}
    for name, kind in _fields(cls).items():
        if _is_group(kind):
            group = _fields(typing.cast(type, kind))
            types.update({f"{name}.{field}": inner for field, inner in group.items()})
        else:
            types[name] = kind
    return types


def _unknown(name: str, known: Sequence[str], what: str) -> SettingsError:
    close = difflib.get_close_matches(name, known, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return SettingsError(f"unknown {what} setting {name!r}{hint}")


def _split(pair: str) -> tuple[str, str]:
    name, sep, value = pair.partition("=")
    if not sep or not name.strip():
        raise SettingsError(f"expected NAME=VALUE, got {pair!r}")
    return name.strip(), value.strip()


def settings_with(pairs: Sequence[str], base: Settings, what: str) -> Settings:
    """`base` with every NAME=VALUE of `pairs` applied and checked; `what` names the
    settings in messages ("forecast", "krr")."""
    types = _setting_types(type(base))
    flat: dict[str, Any] = {}
    grouped: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        name, text = _split(pair)
        if name not in types:
            raise _unknown(name, list(types), what)
        value = _convert(name, types[name], text)
        group, _, field = name.rpartition(".")
        if group:
            grouped.setdefault(group, {})[field] = value
        else:
            flat[name] = value
    for group, values in grouped.items():
        flat[group] = _replace(getattr(base, group), values, what, group)
    return typing.cast(Settings, _replace(base, flat, what))
