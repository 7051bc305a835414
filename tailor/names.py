"""The API server's rules for object names, checked where a flag or a file names an object,
so a typo is exit 2 now rather than a write refused on every pass."""

from __future__ import annotations

import re

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class InvalidName(ValueError):
    """Not a name the API server would accept for that kind of object."""


def shown(text: str, most: int = 60) -> str:
    """`text` quoted for an error message, cut when long (a 2 MB name stays one line)."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most]!r}... ({len(text):,} characters)"


def namespace_name(text: str) -> str:
    """A namespace's name (a DNS label): lower-case letters, digits and '-', at most 63."""
    if len(text) > 63 or not _LABEL.fullmatch(text):
        raise InvalidName(
            f"{shown(text)} is not a namespace name "
            "(not a valid Kubernetes name: lower-case letters, digits, '-')"
        )
    return text


def object_name(text: str) -> str:
    """Most objects' names (a DNS subdomain): labels joined by '.', at most 253."""
    if len(text) > 253 or not _SUBDOMAIN.fullmatch(text):
        raise InvalidName(
            f"{shown(text)} is not a valid Kubernetes name (lower-case letters, digits, '-', '.')"
        )
    return text


# Kubernetes' name rules by kind of name: (pattern, most characters, what it allows)
DNS_LABEL = (_LABEL.pattern, 63, "lower-case letters, digits and '-'")
DNS_SUBDOMAIN = (_SUBDOMAIN.pattern, 253, "lower-case letters, digits, '-' and '.'")
LABEL_VALUE = (
    r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?",
    63,
    "letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
)
NAME_RULES = {
    "namespace": DNS_LABEL,
    "pod": DNS_SUBDOMAIN,
    "workload": DNS_SUBDOMAIN,  # a controller's name
    "container": DNS_LABEL,
}


def label_value(text: str) -> str:
    """A label's value (e.g. --match cluster=prod): at most 63 characters of LABEL_VALUE."""
    pattern, most, allows = LABEL_VALUE
    if len(text) > most or not re.fullmatch(pattern, text):
        raise InvalidName(
            f"{shown(text)} is not a Kubernetes label value (at most {most} {allows})"
        )
    return text
