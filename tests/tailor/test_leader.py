"""The leader-election rules, on an in-memory Lease and a fake clock: at most one leader."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tailor.leader import (
    LeaderElectionError,
    LeaderElector,
    LeaseRecord,
    LeaseTiming,
    claim,
    released,
)

T0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
TIMING = LeaseTiming()


class MemoryLease:
    """A Lease with a resourceVersion, as the API server keeps it; `down` refuses all."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.down = False

    def read(self) -> tuple[LeaseRecord, str] | None:
        if self.down:
            raise ConnectionError("API server unreachable")
        return None if self.record is None else (self.record, str(self.version))

    def create(self, record: LeaseRecord) -> bool:
        if self.record is not None:
            return False
        self.record, self.version = record, self.version + 1
        return True

    def replace(self, record: LeaseRecord, version: str) -> bool:
        if self.down:
            raise ConnectionError("API server unreachable")
        if version != str(self.version):
            return False
        self.record, self.version = record, self.version + 1
        return True


class Clock:
    def __init__(self) -> None:
        self.seconds = 0.0

    def monotonic(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.seconds)


def elector(store: MemoryLease, clock: Clock, identity: str) -> LeaderElector:
    return LeaderElector(store, identity, TIMING, clock.now, clock.monotonic)


def test_a_missing_lease_is_created_and_a_holder_renews_it_keeping_its_acquire_time() -> None:
    first = claim(None, 0, "a", TIMING, T0)
    assert first == LeaseRecord("a", 15, T0, T0, 0)
    later = T0 + timedelta(seconds=2)
    assert claim(first, 0, "a", TIMING, later) == LeaseRecord("a", 15, T0, later, 0)


def test_another_holder_is_waited_out_for_a_whole_lease_seen_unchanged() -> None:
    held = LeaseRecord("a", 15, T0, T0, 3)
    assert claim(held, 14.9, "b", TIMING, T0) is None
    taken = claim(held, 15, "b", TIMING, T0)
    assert taken is not None
    assert (taken.holder, taken.transitions, taken.acquire_time) == ("b", 4, T0)


def test_a_released_lease_is_taken_at_once() -> None:
    free = released(LeaseRecord("a", 15, T0, T0, 1), T0)
    assert (free.holder, free.duration_seconds) == ("", 1)
    taken = claim(free, 0, "b", TIMING, T0)
    assert taken is not None and taken.holder == "b"


@pytest.mark.parametrize(
    ("lease", "renew", "retry", "message"),
    [
        (15, 15, 2, "shorter than the lease"),
        (15, 10, 0, "positive"),
        (15, 2, 2, "longer than 1.2"),
        (0.5, 0.2, 0.1, "whole number"),
    ],
)
def test_timings_that_could_depose_a_leader_unawares_are_refused(
    lease: float, renew: float, retry: float, message: str
) -> None:
    with pytest.raises(LeaderElectionError, match=message):
        LeaseTiming(*(timedelta(seconds=s) for s in (lease, renew, retry)))


def run(electors: list[LeaderElector], clock: Clock, seconds: float) -> list[list[bool]]:
    """Step every elector each 2 s (the retry period) for `seconds`; who leads at each."""
    leading = []
    end = clock.seconds + seconds
    while clock.seconds < end:
        for each in electors:
            each.step()
        leading.append([each.is_leader() for each in electors])
        clock.seconds += 2
    return leading


def test_one_replica_leads_and_the_other_takes_over_only_a_lease_after_it_died() -> None:
    store, clock = MemoryLease(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    started: list[str] = []
    a.on_started, b.on_started = (lambda: started.append("a")), (lambda: started.append("b"))
    history = run([a, b], clock, 60)
    assert all(row == [True, False] for row in history)
    assert started == ["a"]

    last_renewal = clock.seconds - 2  # then a stops renewing: its process is gone
    b.step()
    while not b.is_leader():
        clock.seconds += 2
        b.step()
    waited = clock.seconds - last_renewal
    assert TIMING.lease_duration.total_seconds() <= waited <= 15 + 2 * 2
    assert started == ["a", "b"]
    assert store.record is not None and store.record.transitions == 1


def test_a_leader_that_cannot_renew_stops_before_anyone_may_take_over() -> None:
    store, clock = MemoryLease(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    lost: list[str] = []
    a.on_lost = lambda: lost.append("a")
    run([a, b], clock, 10)
    real_replace = store.replace
    store.replace = lambda record, version: (  # type: ignore[method-assign]
        False if record.holder == "a" else real_replace(record, version)
    )  # a's renewals are refused (its API server is partitioned away); b still reads
    history = run([a, b], clock, 40)
    assert not any(row == [True, True] for row in history)
    assert lost == ["a"]
    assert history[-1] == [False, True]
    # a stopped within the renew deadline (10 s), b started no earlier than 15 s in
    assert history.index([False, False]) <= 5 < history.index([False, True])


def test_an_unreachable_api_server_is_a_failed_attempt_not_a_crash() -> None:
    store, clock = MemoryLease(), Clock()
    a = elector(store, clock, "a")
    lost: list[str] = []
    a.on_lost = lambda: lost.append("a")
    run([a], clock, 4)
    store.down = True
    assert run([a], clock, 6)[-1] == [True]  # within the renew deadline it still leads
    assert run([a], clock, 6)[-1] == [False]
    assert lost == ["a"]
    store.down = False
    assert run([a], clock, 2) == [[True]]  # its own record: renewed at once


def test_a_released_lease_passes_to_the_standby_at_its_next_attempt() -> None:
    store, clock = MemoryLease(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    run([a, b], clock, 20)
    a.release()
    assert not a.is_leader()
    assert store.record is not None and store.record.holder == ""
    b.step()
    assert b.is_leader()


def test_racing_replicas_cannot_both_create_the_lease() -> None:
    store, clock = MemoryLease(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    store.create(LeaseRecord("c", 15, T0, T0))  # c created it between their reads
    a.step()
    b.step()
    assert not a.is_leader() and not b.is_leader()
