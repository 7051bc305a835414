"""The circuit breaker on the API reads left in a review (pure, a clock the test drives)."""

from __future__ import annotations

import pytest

from admission.breaker import BreakerOpen, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def failing() -> None:
    raise ConnectionError("API server away")


def test_three_failures_open_it_for_the_cooldown_then_one_success_closes_it() -> None:
    clock, opened = Clock(), []
    breaker = CircuitBreaker(failures=3, cooldown=10, clock=clock, on_open=lambda: opened.append(1))
    for _ in range(3):
        with pytest.raises(ConnectionError):
            breaker.call(failing, ConnectionError)
    assert breaker.is_open and opened == [1]
    calls: list[int] = []
    with pytest.raises(BreakerOpen):
        breaker.call(lambda: calls.append(1))
    assert calls == []  # not even tried while open
    clock.now = 10.5
    assert breaker.call(lambda: "answered") == "answered"  # half-open: one try, it worked
    assert not breaker.is_open
    with pytest.raises(ConnectionError):  # closed again: one failure does not open it
        breaker.call(failing, ConnectionError)
    assert breaker.call(lambda: 2) == 2


def test_a_failed_probe_opens_it_again_and_other_errors_do_not_count() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=2, cooldown=5, clock=clock)
    for _ in range(2):
        with pytest.raises(ConnectionError):
            breaker.call(failing, ConnectionError)
    clock.now = 6
    with pytest.raises(ConnectionError):
        breaker.call(failing, ConnectionError)  # the probe fails: open for another 5 s
    clock.now = 10
    with pytest.raises(BreakerOpen):
        breaker.call(lambda: 1)
    clock.now = 11.5
    with pytest.raises(ValueError):  # not a counted failure: the breaker only saw a try
        breaker.call(lambda: int("x"), ConnectionError)
    assert breaker.call(lambda: 1) == 1
