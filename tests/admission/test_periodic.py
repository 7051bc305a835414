"""The background loop shared by the list refresh and the certificate check."""

from __future__ import annotations

import logging
import threading

import pytest

from admission.periodic import Periodic
from tests.cluster.waiting import wait_until


def test_a_failing_pass_is_logged_and_the_next_one_still_comes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def task() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first pass breaks")

    caplog.set_level(logging.ERROR, logger="tailor.admission")
    periodic = Periodic(task, 0.01, name="test-periodic", failure="pass failed").start()
    try:
        wait_until(lambda: len(calls) >= 3, timeout=10, what="three passes")
    finally:
        periodic.stop()
    assert [record.message for record in caplog.records] == ["pass failed"]
    assert "first pass breaks" in caplog.text
    stopped_at = len(calls)
    threading.Event().wait(0.05)
    assert len(calls) == stopped_at  # nothing after stop()


def test_nothing_runs_before_one_period_and_stop_without_start_is_fine() -> None:
    calls: list[int] = []
    periodic = Periodic(lambda: calls.append(1), 3600, name="test-periodic", failure="x")
    periodic.stop()
    periodic = Periodic(lambda: calls.append(1), 3600, name="test-periodic", failure="x").start()
    periodic.stop()
    assert calls == []
