"""The webhook's status Lease: renewed by each replica, judged stale after a minute."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from tailor.kube import ClusterError
from tailor.leader import LeaseRecord
from tailor.status_lease import StatusCheck, StatusHeartbeat, stale_reason
from tests.tailor.test_leader import T0, MemoryLease
from updater.restriction import WebhookStatus


class Broken(MemoryLease):
    def read(self) -> tuple[LeaseRecord, str] | None:
        raise ClusterError("cannot read Lease x/y: forbidden")


def test_a_lease_is_fresh_for_a_minute_after_its_last_renewal() -> None:
    renewed = LeaseRecord("webhook-0", 0, T0, T0)
    assert stale_reason(renewed, T0 + timedelta(seconds=59), "ns/l") is None
    late = stale_reason(renewed, T0 + timedelta(seconds=61), "ns/l")
    assert late == "the webhook's status Lease ns/l was last renewed 0:01:01 ago"
    assert "does not exist" in (stale_reason(None, T0, "ns/l") or "")
    assert "never renewed" in (stale_reason(LeaseRecord("", 0, None, None), T0, "ns/l") or "")


class Raced(MemoryLease):
    """Another replica renews between our read and our write."""

    def replace(self, record: LeaseRecord, version: str) -> bool:
        super().replace(LeaseRecord("webhook-1", 0, T0, T0 + timedelta(seconds=9)), version)
        return super().replace(record, version)


def test_each_beat_renews_the_lease_and_a_replica_that_lost_the_race_is_fine() -> None:
    lease, times = MemoryLease(), iter([T0, T0 + timedelta(seconds=10)])
    heartbeat = StatusHeartbeat(lease, "webhook-0", clock=lambda: next(times))
    assert heartbeat.beat()  # created
    assert lease.record == LeaseRecord("webhook-0", 60, T0, T0)
    assert heartbeat.beat()  # renewed
    assert lease.record == LeaseRecord("webhook-0", 60, T0, T0 + timedelta(seconds=10))
    assert StatusCheck(lease)(T0 + timedelta(seconds=70)) is None
    assert StatusCheck(lease)(T0 + timedelta(seconds=71)) is not None
    raced = Raced()
    raced.create(LeaseRecord("webhook-1", 0, T0, T0))
    assert not StatusHeartbeat(raced, "webhook-0", clock=lambda: T0).beat()  # 409: no error
    assert raced.record is not None and raced.record.holder == "webhook-1"


def test_an_unreadable_lease_is_a_warning_when_renewing_and_a_refusal_when_evicting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="tailor.status_lease"):
        assert not StatusHeartbeat(Broken(), "webhook-0", clock=lambda: T0).beat()
    assert "not renewed: cannot read Lease x/y: forbidden" in caplog.text
    reason = StatusCheck(Broken())(T0)
    assert reason is not None and reason.startswith("cannot read the webhook's status Lease")


def test_the_updater_asks_once_a_pass_and_only_when_an_eviction_is_due() -> None:
    asked: list[object] = []

    def down(now: object) -> str | None:
        asked.append(now)
        return "the webhook's status Lease ns/l does not exist"

    status = WebhookStatus(down)
    assert asked == []
    first = status.refusal(T0)
    assert first is not None and first.endswith(
        "the replacement would come back unsized "
        "(--no-use-admission-controller-status evicts anyway)"
    )
    assert status.refusal(T0) == first and asked == [T0]
    assert WebhookStatus(lambda now: None).refusal(T0) is None
    assert WebhookStatus(None).refusal(T0) is None
