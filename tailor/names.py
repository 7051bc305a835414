"""The API server's rules for object names, checked where a flag names an object, so a typo
is exit 2 now rather than a write refused on every pass."""

from __future__ import annotations

import re

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class InvalidName(ValueError):
    """Not a name the API server would accept for that kind of object."""


def namespace_name(text: str) -> str:
    """A namespace's name (a DNS label): lower-case letters, digits and '-', at most 63."""
    if len(text) > 63 or not _LABEL.fullmatch(text):
        raise InvalidName(
            f"{text!r} is not a namespace name "
            "(not a valid Kubernetes name: lower-case letters, digits, '-')"
        )
    return text


def object_name(text: str) -> str:
    """Most objects' names (a DNS subdomain): labels joined by '.', at most 253."""
    if len(text) > 253 or not _SUBDOMAIN.fullmatch(text):
        raise InvalidName(
            f"{text!r} is not a valid Kubernetes name (lower-case letters, digits, '-', '.')"
        )
    return text
