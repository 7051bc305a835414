"""Kubernetes resource quantities, parsed and printed exactly as the API server does.

A quantity is kept as a whole number of nano-units: the API never holds anything
finer than 1n (finer inputs are rounded UP, away from zero, so asking for some of
a resource never yields none), which makes integer nanos an exact representation.
Each quantity remembers its format family (binary SI, decimal SI or decimal
exponent) so that printing it gives the same canonical text apimachinery gives:
no fractional digits, the largest suffix that loses nothing.

Grammar accepted (that of the API): an optional sign, a number (`1`, `1.5`, `1.`,
`.5`) and an optional suffix: `Ki Mi Gi Ti Pi Ei`, `n u m k M G T P E` or an
integer exponent `e3` / `E-3`. Anything else raises `QuantityError`.
"""

from __future__ import annotations

import math
import numbers
import operator
import re
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from functools import lru_cache
from typing import Any, SupportsIndex

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

NANOS_PER_UNIT = 10**9
MILLIS_PER_UNIT = 1000
INT64_MAX = 2**63 - 1
# Exponents beyond this are refused: they are far outside anything the API can store
# and would only make the exact arithmetic slow.
_MAX_EXPONENT = 1000
_MAX_TEXT_LENGTH = 256


class QuantityError(ValueError):
    """A string (or number) that is not a valid Kubernetes quantity."""

    def __init__(self, text: object, reason: str) -> None:
        super().__init__(f"invalid quantity {text!r}: {reason}")
        self.text = text
        self.reason = reason


class QuantityFormat(StrEnum):
    """The suffix family a quantity is printed in (kept from parsing, like apimachinery)."""

    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXPONENTS = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_SUFFIXES = {exponent: suffix for suffix, exponent in _DECIMAL_EXPONENTS.items()}
_BINARY_SUFFIXES = {exponent: suffix for suffix, exponent in _BINARY_EXPONENTS.items()}

_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-])?"
    r"(?:(?P<whole>[0-9]+)(?:\.(?P<fraction>[0-9]*))?|\.(?P<only_fraction>[0-9]+))"
    r"(?P<suffix>[KMGTPE]i|[eE][+-]?[0-9]+|[numkMGTPE])?"
)


def _ceil_div(numerator: int, denominator: int) -> int:
    return -((-numerator) // denominator)


def _round_up_to_nanos(value: Fraction) -> int:
    """Nanos of `value`, rounding any finer remainder away from zero."""
    scaled = value * NANOS_PER_UNIT
    magnitude = _ceil_div(abs(scaled.numerator), scaled.denominator)
    return magnitude if scaled >= 0 else -magnitude


@dataclass(frozen=True, eq=False)
class Quantity:
    """An exact resource amount: `nanos` nano-units printed in `format`.

    Equality, hashing and ordering go by amount only (like apimachinery's Cmp), so
    `Quantity.parse("1Gi") == Quantity.parse("1073741824")`.
    """

    nanos: int
    format: QuantityFormat = QuantityFormat.DECIMAL_SI

    # --- construction -----------------------------------------------------------

    @classmethod
    def parse(cls, text: QuantityInput) -> Quantity:
        """Parse the API's text form (numbers as a JSON document may hold them too)."""
        if type(text) is str:  # the API's form, and the commonest: no type checks before it
            return _parsed(text) if cls is Quantity else cls._parse_text(text)
        if isinstance(text, Quantity):
            return text
        if isinstance(text, bool):
            raise QuantityError(text, "a boolean is not a quantity")
        if isinstance(text, int | numbers.Integral):
            return cls(operator.index(text) * NANOS_PER_UNIT, QuantityFormat.DECIMAL_SI)
        if isinstance(text, float):
            if not math.isfinite(text):
                raise QuantityError(text, "not a finite number")
            text = repr(float(text))  # numpy floats repr as np.float64(...)
        if not isinstance(text, str):
            raise QuantityError(text, f"expected a string, got {type(text).__name__}")
        if cls is Quantity:  # immutable: a text seen before (every pod of a rollout) is reused
            return _parsed(text)
        return cls._parse_text(text)

    @classmethod
    def _parse_text(cls, text: str) -> Quantity:
        if len(text) > _MAX_TEXT_LENGTH:
            raise QuantityError(text, f"longer than {_MAX_TEXT_LENGTH} characters")
        match = _QUANTITY_RE.fullmatch(text)
        if match is None:
            raise QuantityError(text, "expected <sign?><number><suffix?>, e.g. 100m, 1.5Gi, 12e6")
        whole = match["whole"] or "0"
        fraction = match["fraction"] or match["only_fraction"] or ""
        suffix = match["suffix"] or ""
        number = Fraction(int(whole + fraction), 10 ** len(fraction))
        if match["sign"] == "-":
            number = -number

        if suffix in _BINARY_EXPONENTS:
            value = number * 2 ** _BINARY_EXPONENTS[suffix]
            value = max(min(value, Fraction(INT64_MAX)), Fraction(-INT64_MAX))
            fmt = QuantityFormat.BINARY_SI
        elif suffix in _DECIMAL_EXPONENTS:
            value = number * Fraction(10) ** _DECIMAL_EXPONENTS[suffix]
            fmt = QuantityFormat.DECIMAL_SI
        else:
            exponent = int(suffix[1:])
            if abs(exponent) > _MAX_EXPONENT:
                raise QuantityError(text, f"exponent {exponent} is out of range")
            value = number * Fraction(10) ** exponent
            fmt = QuantityFormat.DECIMAL_EXPONENT
        nanos = _round_up_to_nanos(value)
        if fmt is QuantityFormat.BINARY_SI and 0 < abs(nanos) < NANOS_PER_UNIT:
            fmt = QuantityFormat.DECIMAL_SI  # below one unit binary would only mislead
        return cls(nanos, fmt)

    @classmethod
    def from_value(
        cls,
        value: Fraction | Decimal | int,
        fmt: QuantityFormat = QuantityFormat.DECIMAL_SI,
    ) -> Quantity:
        """An exact amount in whole units (rounded up to 1n if finer).

        A Decimal NaN or infinity has no exact value: QuantityError, not Overflow/ValueError.
        """
        if isinstance(value, Decimal) and not value.is_finite():
            raise QuantityError(value, "not a finite number")
        return cls(_round_up_to_nanos(Fraction(value)), fmt)

    @classmethod
    def from_milli(cls, millis: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        return cls(millis * (NANOS_PER_UNIT // MILLIS_PER_UNIT), fmt)

    # --- reading the amount -------------------------------------------------------

    @property
    def value(self) -> Fraction:
        """The exact amount in whole units (cores, bytes, ...)."""
        return Fraction(self.nanos, NANOS_PER_UNIT)

    def milli_value(self) -> int:
        """Amount in milli-units, rounded up (apimachinery's MilliValue)."""
        return _ceil_div(self.nanos, NANOS_PER_UNIT // MILLIS_PER_UNIT)

    def int_value(self) -> int:
        """Amount in whole units, rounded up (apimachinery's Value)."""
        return _ceil_div(self.nanos, NANOS_PER_UNIT)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def __float__(self) -> float:
        """Nearest float; beyond the float range +-inf (apimachinery's AsApproximateFloat64).

        The API accepts decimal amounts like `1e309`; reading one must not crash.
        """
        try:
            return self.nanos / NANOS_PER_UNIT
        except OverflowError:
            return math.inf if self.nanos > 0 else -math.inf

    # --- comparison ---------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.nanos == other.nanos
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.nanos)

    # Against anything but a Quantity these return NotImplemented, so Python raises
    # its usual TypeError (e.g. `q > 0`) instead of an AttributeError from inside.
    def __lt__(self, other: object) -> bool:
        return self.nanos < other.nanos if isinstance(other, Quantity) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.nanos <= other.nanos if isinstance(other, Quantity) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.nanos > other.nanos if isinstance(other, Quantity) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.nanos >= other.nanos if isinstance(other, Quantity) else NotImplemented

    def __add__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self.nanos + other.nanos, self.format)

    def __sub__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self.nanos - other.nanos, self.format)

    # --- printing -----------------------------------------------------------------

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def canonical(self) -> str:
        """The API server's canonical text: exact, no fraction, largest suffix."""
        if self.nanos == 0:
            return "0"
        if self.format is QuantityFormat.BINARY_SI:
            binary = self._binary_text()
            if binary is not None:
                return binary
            return self._decimal_text(QuantityFormat.DECIMAL_SI)
        return self._decimal_text(self.format)

    def _binary_text(self) -> str | None:
        """Binary form, or None where it would round (below 1024 or not whole units)."""
        whole, remainder = divmod(abs(self.nanos), NANOS_PER_UNIT)
        if remainder or whole < 1024:
            return None
        exponent = 0
        while whole % 1024 == 0 and exponent < 60:
            whole //= 1024
            exponent += 10
        sign = "-" if self.nanos < 0 else ""
        return f"{sign}{whole}{_BINARY_SUFFIXES.get(exponent, '')}"

    def _decimal_text(self, fmt: QuantityFormat) -> str:
        mantissa, exponent = abs(self.nanos), -9
        while mantissa % 10 == 0:
            mantissa //= 10
            exponent += 1
        while exponent % 3:
            mantissa *= 10
            exponent -= 1
        sign = "-" if self.nanos < 0 else ""
        if fmt is QuantityFormat.DECIMAL_EXPONENT:
            return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
        if exponent > 18:  # beyond exa: stay decimal SI with a larger mantissa
            mantissa *= 10 ** (exponent - 18)
            exponent = 18
        return f"{sign}{mantissa}{_DECIMAL_SUFFIXES[exponent]}"

    # --- pydantic integration -----------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Accept text or JSON numbers; always write the canonical string."""
        return core_schema.no_info_plain_validator_function(
            cls.parse,
            json_schema_input_schema=core_schema.union_schema(
                [core_schema.str_schema(), core_schema.int_schema(), core_schema.float_schema()]
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(
                str, return_schema=core_schema.str_schema(), when_used="always"
            ),
        )


QuantityInput = str | int | float | SupportsIndex | Quantity
"""What `Quantity.parse` accepts: API text, or a number as a JSON document may hold it."""


def parse_quantity(text: QuantityInput) -> Quantity:
    """Parse a quantity; raises QuantityError naming the text when it is invalid."""
    return Quantity.parse(text)


def cpu_cores(quantity: QuantityInput) -> float:
    """CPU cores as a float: `cpu_cores("250m") == 0.25`."""
    return float(Quantity.parse(quantity))


def memory_bytes(quantity: QuantityInput) -> float:
    """Bytes as a float: `memory_bytes("1Ki") == 1024.0`."""
    return float(Quantity.parse(quantity))


def _exact_non_negative(amount: float, what: str) -> Decimal:
    """The decimal a person means by `amount` (its shortest repr), refusing junk."""
    if isinstance(amount, bool) or not math.isfinite(amount) or amount < 0:
        raise ValueError(f"{what} must be a finite non-negative number, got {amount!r}")
    return Decimal(repr(float(amount)))


def cpu_quantity(cores: float) -> Quantity:
    """Cores as a quantity rounded UP to whole millicores (the VPA's CPU granularity)."""
    millis = math.ceil(_exact_non_negative(cores, "cores") * MILLIS_PER_UNIT)
    return Quantity.from_milli(millis)


_EXACT_FLOAT_INT = 2**53  # every int up to here is a float exactly, and reprs as itself


def memory_quantity(num_bytes: float) -> Quantity:
    """Bytes as a quantity rounded UP to whole bytes."""
    if type(num_bytes) is int and 0 <= num_bytes <= _EXACT_FLOAT_INT:
        return Quantity(num_bytes * NANOS_PER_UNIT)  # what the general path gives, faster
    return Quantity.from_value(math.ceil(_exact_non_negative(num_bytes, "bytes")))


def format_cpu(cores: float) -> str:
    """Cores as the upstream VPA writes them: `0.0251 -> "26m"`, `2.0 -> "2"`."""
    return cpu_quantity(cores).canonical()


def format_memory(num_bytes: float, human: bool = False) -> str:
    """Bytes as the upstream VPA writes them: whole bytes in canonical decimal form.

    The upstream recommender builds a decimal-SI quantity of whole bytes, so 250 MiB
    is written `"262144k"` (the same amount as `"262144000"`, which any client parses
    and a Go client re-prints as `"262144k"`). `human=True` gives
    `format_memory_human` instead (`"250Mi"`).
    """
    if human:
        return format_memory_human(num_bytes)
    return memory_quantity(num_bytes).canonical()


def format_memory_plain(num_bytes: float) -> str:
    """Bytes as a plain integer string (`"262144000"`), rounded up; also a valid quantity."""
    return str(math.ceil(_exact_non_negative(num_bytes, "bytes")))


def format_memory_human(num_bytes: float) -> str:
    """A readable binary form for people (`"250Mi"`), rounded UP to whole Mi (Ki below 1Mi).

    The result is still a valid quantity, at most 1 MiB above the input.
    """
    exact = _exact_non_negative(num_bytes, "bytes")
    step = 2**20 if exact >= 2**20 else 2**10
    rounded = math.ceil(exact / step) * step
    return Quantity.from_value(rounded, QuantityFormat.BINARY_SI).canonical()


@lru_cache(maxsize=4096)
def _parsed(text: str) -> Quantity:
    """`Quantity._parse_text`, remembered: the webhook parses the same few texts per review."""
    return Quantity._parse_text(text)
