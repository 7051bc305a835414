"""Durations as people type them on the command line: `90s`, `5m`, `6h`, `8d`, `1w`, `1h30m`.

One parser for every flag that takes a duration, so `--history 8d` and
`--warm-up 6h` mean the same thing everywhere.
"""

from __future__ import annotations

import re
from datetime import timedelta

HOUR = 3_600
DAY = 86_400
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": HOUR, "d": DAY, "w": 7 * DAY}
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_PART = re.compile(rf"({_NUMBER.pattern})(ms|s|m|h|d|w)")


class DurationError(ValueError):
    """A duration string that does not parse, or that the data's time grid cannot hold."""


def whole_windows(seconds: int, step: int, what: str) -> int:
    """How many sample windows of `step` seconds make `seconds`.

    Update periods, split spans and reference blocks are cut from the data's grid; a
    span between windows used to be rounded, silently changing what was asked for.
    """
    if step <= 0 or seconds <= 0 or seconds % step:
        raise DurationError(
            f"{what} ({seconds} s) must be a whole number of the data's {step} s sample period"
        )
    return seconds // step


def parse_duration(text: str) -> timedelta:
    """Parse a sequence of number+unit parts; a bare number means seconds.

    Signs, exponents, `inf` and spans past timedelta's range are refused here: they
    used to slip through float() as negative spans or OverflowError.
    """
    if not isinstance(text, str):
        raise DurationError(f"invalid duration {text!r}: expected text such as 6h")
    cleaned = text.strip().lower()
    if not cleaned:
        raise DurationError("empty duration")
    if _NUMBER.fullmatch(cleaned):
        return _span(float(cleaned), text)
    position = 0
    total = 0.0
    for match in _PART.finditer(cleaned):
        if match.start() != position:
            break
        total += float(match.group(1)) * UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(cleaned) or position == 0:
        raise DurationError(
            f"invalid duration {text!r}: use a number with a unit (ms, s, m, h, d, w),"
            " e.g. 6h or 1h30m"
        )
    return _span(total, text)


def _span(seconds: float, text: str) -> timedelta:
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise DurationError(f"invalid duration {text!r}: too long") from None


def format_duration(value: timedelta) -> str:
    """The shortest whole-unit spelling (`1d`, `90m`), for messages and round trips."""
    seconds = value.total_seconds()
    for unit in ("w", "d", "h", "m", "s"):
        size = UNIT_SECONDS[unit]
        if seconds and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
