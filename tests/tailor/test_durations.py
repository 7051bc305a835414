from datetime import timedelta

import pytest

from tailor.durations import DurationError, format_duration, parse_duration, whole_windows


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("5m", 300),
        ("6h", 21600),
        ("8d", 691200),
        ("1w", 604800),
        ("1h30m", 5400),
        ("300", 300),
        ("1.5h", 5400),
        ("250ms", 0.25),
        (" 2D ", 172800),
    ],
)
def test_parses_each_unit(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "h",
        "5 minutes",
        "5x",
        "1h-2m",
        "m5",
        "1h 30m",
        "inf",
        "nan",
        "1e308",
        "99999999999999999999w",
    ],
)
def test_rejects_malformed(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


@pytest.mark.parametrize(
    "text", ["-5", "-1.5", "inf", "-inf", "1e20", "1e3", "99999999999d", "9" * 400, "1_000"]
)
def test_signs_exponents_and_overlong_spans_are_refused(text: str) -> None:
    # These used to pass float() as negative spans or raise OverflowError.
    with pytest.raises(DurationError, match="invalid duration"):
        parse_duration(text)


def test_a_non_string_is_refused() -> None:
    with pytest.raises(DurationError, match="expected text"):
        parse_duration(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["1d", "90m", "6h", "45s", "2w"])
def test_format_round_trips(text: str) -> None:
    assert format_duration(parse_duration(text)) == text


def test_a_span_must_hold_whole_sample_windows() -> None:
    assert whole_windows(3600, 300, "the period") == 12
    for seconds, step in ((420, 300), (0, 300), (3600, 0), (3600, 7200)):
        with pytest.raises(DurationError, match="whole number of the data's"):
            whole_windows(seconds, step, "the period")
