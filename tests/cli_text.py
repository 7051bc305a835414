"""Reading what a command printed, as a person would."""

from __future__ import annotations


def plain(output: str) -> str:
    """The words of a CLI's output on one line: rich wraps errors in a box of `│` borders."""
    return " ".join(output.replace("│", " ").split())
