"""Quantities: every form the API accepts, canonical printing, exact round trips."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from tailor.quantity import (
    Quantity,
    QuantityError,
    QuantityFormat,
    cpu_cores,
    format_cpu,
    format_memory,
    format_memory_human,
    format_memory_plain,
    memory_bytes,
    parse_quantity,
)

# (text, exact value in units, canonical text) — canonical forms worked out from the
# apimachinery rules: keep the family, no fractional digits, largest exact suffix.
FORMS = [
    ("100m", Fraction(1, 10), "100m"),
    ("0.5", Fraction(1, 2), "500m"),
    ("1e3", Fraction(1000), "1e3"),
    ("1E3", Fraction(1000), "1e3"),
    ("128Mi", Fraction(128 * 2**20), "128Mi"),
    ("1G", Fraction(10**9), "1G"),
    ("12e6", Fraction(12 * 10**6), "12e6"),
    ("1.5Gi", Fraction(3 * 2**29), "1536Mi"),  # 1.5 * 2^30 = 1536 * 2^20
    ("+1", Fraction(1), "1"),
    (".5", Fraction(1, 2), "500m"),
    ("1.", Fraction(1), "1"),
    ("5n", Fraction(5, 10**9), "5n"),
    ("5u", Fraction(5, 10**6), "5u"),
    ("1000n", Fraction(1, 10**6), "1u"),
    ("1500m", Fraction(3, 2), "1500m"),
    ("2000m", Fraction(2), "2"),
    ("1000M", Fraction(10**9), "1G"),
    ("1024", Fraction(1024), "1024"),  # decimal family stays decimal
    ("1Ki", Fraction(1024), "1Ki"),
    ("2048Ki", Fraction(2 * 2**20), "2Mi"),
    ("0.5Ki", Fraction(512), "512"),  # binary below 1024 prints decimal
    ("1.1Ki", Fraction(11264, 10), "1126400m"),  # not whole bytes: decimal, exact
    ("-1.5Gi", Fraction(-3 * 2**29), "-1536Mi"),
    ("1E", Fraction(10**18), "1E"),  # a lone E is exa, not an exponent
    ("1Ei", Fraction(2**60), "1Ei"),
    ("1000E", Fraction(10**21), "1000E"),
    ("100e-3", Fraction(1, 10), "100e-3"),
    ("1e-3", Fraction(1, 1000), "1e-3"),
    ("1e-4", Fraction(1, 10**4), "100e-6"),
    ("0", Fraction(0), "0"),
    ("-0", Fraction(0), "0"),
    ("0Mi", Fraction(0), "0"),
    ("007", Fraction(7), "7"),
    ("262144000", Fraction(262144000), "262144k"),
]


@pytest.mark.parametrize(("text", "value", "canonical"), FORMS)
def test_every_form_parses_to_the_exact_value_and_prints_canonically(
    text: str, value: Fraction, canonical: str
) -> None:
    quantity = parse_quantity(text)
    assert quantity.value == value
    assert str(quantity) == canonical


@pytest.mark.parametrize(("text", "value", "canonical"), FORMS)
def test_canonical_text_round_trips_unchanged(text: str, value: Fraction, canonical: str) -> None:
    again = parse_quantity(canonical)
    assert again.value == value
    assert again.canonical() == canonical


def test_format_family_is_remembered() -> None:
    assert parse_quantity("1Gi").format is QuantityFormat.BINARY_SI
    assert parse_quantity("1G").format is QuantityFormat.DECIMAL_SI
    assert parse_quantity("1e9").format is QuantityFormat.DECIMAL_EXPONENT
    assert parse_quantity("0.5Ki").format is QuantityFormat.BINARY_SI  # 512 is whole bytes


def test_below_one_nano_rounds_up_away_from_zero() -> None:
    assert str(parse_quantity("0.1n")) == "1n"
    assert str(parse_quantity("1.5n")) == "2n"
    assert str(parse_quantity("-0.1n")) == "-1n"
    assert str(parse_quantity("1e-10")) == "1e-9"
    assert parse_quantity("0.0000000001").nanos == 1


def test_binary_values_are_capped_at_int64() -> None:
    assert parse_quantity("16Ei").value == 2**63 - 1
    assert parse_quantity("-16Ei").value == -(2**63 - 1)


def test_numbers_from_json_are_accepted() -> None:
    assert parse_quantity(3) == parse_quantity("3")
    assert str(parse_quantity(1.5)) == "1500m"
    assert str(parse_quantity(1e-05)) == "10e-6"  # repr "1e-05": exponent family
    assert str(parse_quantity(np.float64(0.25))) == "250m"
    assert str(parse_quantity(np.int64(4))) == "4"


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "abc",
        "1.2.3",
        "1Ki2",
        "1K",
        "1ki",
        "ki",
        ".",
        "+",
        "-",
        "1e",
        "1e1.5",
        "Mi",
        "1Mib",
        "1m1",
        "--1",
        "1,5",
        "0x10",
        "1_000",
        "∞",
    ],
)
def test_invalid_text_raises_quantity_error_naming_it(text: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert repr(text) in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_absurd_texts_are_refused_cleanly() -> None:
    with pytest.raises(QuantityError, match="out of range"):
        parse_quantity("1e100000")
    with pytest.raises(QuantityError, match="longer than"):
        parse_quantity("9" * 5000)


@pytest.mark.parametrize("value", [True, None, float("nan"), float("inf"), [1]])
def test_non_quantities_are_rejected(value: object) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(value)  # type: ignore[arg-type]


def test_amounts_beyond_the_float_range_read_as_infinity() -> None:
    # The API stores "1e309" (decimal amounts are not capped); as a float it saturates.
    assert cpu_cores("1e309") == float("inf")
    assert memory_bytes("-1e400") == float("-inf")
    assert str(parse_quantity("1e309")) == "1e309"


def test_equality_and_order_go_by_amount_not_spelling() -> None:
    assert parse_quantity("1Gi") == parse_quantity("1073741824")
    assert hash(parse_quantity("1Gi")) == hash(parse_quantity("1073741824"))
    assert parse_quantity("999m") < parse_quantity("1")
    assert max(parse_quantity("1Mi"), parse_quantity("1M")) == parse_quantity("1Mi")
    assert str(parse_quantity("1Gi") + parse_quantity("512Mi")) == "1536Mi"
    assert str(parse_quantity("1") - parse_quantity("250m")) == "750m"


def test_milli_and_int_values_round_up_like_apimachinery() -> None:
    assert parse_quantity("1500u").milli_value() == 2  # 1.5m -> 2m
    assert parse_quantity("100m").int_value() == 1
    assert parse_quantity("1Ki").int_value() == 1024
    assert parse_quantity("-1500u").milli_value() == -1  # ceiling, as Go's ScaledValue


def test_cpu_cores_and_memory_bytes() -> None:
    assert cpu_cores("250m") == 0.25
    assert cpu_cores("2") == 2.0
    assert cpu_cores(0.5) == 0.5
    assert memory_bytes("1Ki") == 1024.0
    assert memory_bytes("1.5Gi") == 1610612736.0
    assert memory_bytes("262144k") == 262144000.0


@pytest.mark.parametrize(
    ("cores", "text"),
    [
        (0.0251, "26m"),
        (2.0, "2"),
        (0.025, "25m"),
        (0.57, "570m"),
        (1.5, "1500m"),
        (0.0, "0"),
        (1e-7, "1m"),
        (0.1 + 0.2, "301m"),
        (np.float64(0.25), "250m"),
    ],
)
def test_format_cpu_rounds_up_to_whole_millicores(cores: float, text: str) -> None:
    # 0.1 + 0.2 is 0.30000000000000004 cores: just above 300m, so 301m.
    assert format_cpu(cores) == text


def test_format_memory_writes_whole_bytes_as_the_upstream_recommender() -> None:
    assert format_memory(262144000.0) == "262144k"
    assert format_memory(1.2) == "2"
    assert format_memory(2**30) == "1073741824"
    assert format_memory_plain(262144000.0) == "262144000"
    assert format_memory_plain(1.2) == "2"
    assert parse_quantity(format_memory(123456789.5)).value == 123456790


def test_format_memory_human_rounds_up_to_whole_mebibytes() -> None:
    assert format_memory_human(262144000) == "250Mi"
    assert format_memory_human(2**30) == "1Gi"
    assert format_memory_human(2**30 + 1) == "1025Mi"
    assert format_memory_human(1000) == "1Ki"
    assert format_memory(1.5 * 2**30, human=True) == "1536Mi"


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_formatting_refuses_negative_or_non_finite_amounts(bad: float) -> None:
    with pytest.raises(ValueError):
        format_cpu(bad)
    with pytest.raises(ValueError):
        format_memory(bad)


@pytest.mark.parametrize("bad", [Decimal("Infinity"), Decimal("-Infinity"), Decimal("NaN")])
def test_from_value_refuses_non_finite_decimals(bad: Decimal) -> None:
    # Infinity used to raise OverflowError from inside Fraction().
    with pytest.raises(QuantityError, match="not a finite number"):
        Quantity.from_value(bad)


def test_from_value_and_from_milli() -> None:
    assert str(Quantity.from_value(Fraction(3, 2))) == "1500m"
    assert str(Quantity.from_value(2**20, QuantityFormat.BINARY_SI)) == "1Mi"
    assert str(Quantity.from_milli(2500)) == "2500m"
    assert repr(parse_quantity("1.5Gi")) == "Quantity('1536Mi')"


@pytest.mark.parametrize(
    "operation",
    [
        lambda q: q > 0,
        lambda q: q <= 1.5,
        lambda q: q + 1,
        lambda q: q - "1",
    ],
)
def test_arithmetic_with_a_non_quantity_is_a_type_error(operation: Any) -> None:
    with pytest.raises(TypeError):
        operation(Quantity.parse("1"))
