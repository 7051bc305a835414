"""The memory-pressure rule: when a stalled share calls for memory, and how much."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from tailor.memory_pressure import MiB, PressureRule, PressureRuleError

Mi = MiB


def test_the_default_rule_is_ten_percent_stalled_over_two_minutes() -> None:
    rule = PressureRule()
    assert (rule.stalled_share, rule.window_seconds) == (0.10, 120)
    assert rule.sustained(0.10) and rule.sustained(0.35)
    assert not rule.sustained(0.099)
    assert not rule.sustained(math.nan)  # no reading: no reaction


def test_the_bump_is_upstreams_oom_bump_of_the_larger_of_request_and_working_set() -> None:
    rule = PressureRule()
    # small containers: + 100 MiB wins; large ones: x 1.2 wins (break-even at 500 MiB)
    assert rule.raised_request(128 * Mi, 230 * Mi) == 330 * Mi
    assert rule.raised_request(1024 * Mi, 900 * Mi) == pytest.approx(1.2 * 1024 * Mi)
    assert rule.raised_request(None, 400 * Mi) == 500 * Mi  # no request: the working set
    # never below the request, whatever the working set
    assert rule.raised_request(700 * Mi, 10 * Mi) > 700 * Mi
    custom = PressureRule(bump_ratio=1.5, min_bump=0)
    assert custom.raised_request(200 * Mi, 100 * Mi) == 300 * Mi


def test_the_window_spans_whole_steps() -> None:
    rule = PressureRule(window=timedelta(minutes=2))
    assert rule.windows_for(30) == 4
    assert rule.windows_for(45) == 3  # 135 s covers the 120 s
    assert rule.windows_for(3600) == 1  # a step longer than the window: that one step
    with pytest.raises(PressureRuleError, match="step must be positive"):
        rule.windows_for(0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"stalled_share": 0.0}, "above 0 and at most 1"),
        ({"stalled_share": 10.0}, "above 0 and at most 1"),
        ({"stalled_share": math.nan}, "above 0 and at most 1"),
        ({"window": timedelta(0)}, "at least 1 s"),
        ({"bump_ratio": 0.9}, "at least 1"),
        ({"bump_ratio": math.inf}, "at least 1"),
        ({"min_bump": -1.0}, ">= 0 bytes"),
    ],
)
def test_a_rule_it_cannot_use_is_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(PressureRuleError, match=message):
        PressureRule(**changes)  # type: ignore[arg-type]
