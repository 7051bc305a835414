"""Leader election on a coordination.k8s.io Lease, so a service can run as several replicas.

Only the replica holding the Lease works; the others wait as hot standbys. The rules are
client-go's, which upstream's recommender and updater use behind `--leader-elect`:
a holder renews every retry period; another replica takes over only once it has seen
the same record unchanged for the lease duration (on its own clock, so clock skew
between nodes does not matter); a leader that cannot renew within the renew deadline
stops leading, before anyone else may start (renew deadline < lease duration).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

LOG = logging.getLogger("tailor.leader")
# client-go's jitter on the retry period: a renew deadline must fit more than one retry.
_JITTER = 1.2


class LeaderElectionError(ValueError):
    """Timings that cannot work: a leader could be deposed before it noticed."""


@dataclass(frozen=True)
class LeaseTiming:
    """Upstream's defaults: 15 s lease, 10 s renew deadline, 2 s between attempts."""

    lease_duration: timedelta = timedelta(seconds=15)
    renew_deadline: timedelta = timedelta(seconds=10)
    retry_period: timedelta = timedelta(seconds=2)

    def __post_init__(self) -> None:
        if self.retry_period <= timedelta(0):
            raise LeaderElectionError("the retry period must be positive")
        if self.lease_duration.total_seconds() < 1 or self.lease_duration.microseconds:
            raise LeaderElectionError("the lease duration must be a whole number of seconds")
        if self.renew_deadline >= self.lease_duration:
            raise LeaderElectionError("the renew deadline must be shorter than the lease duration")
        if self.renew_deadline <= self.retry_period * _JITTER:
            raise LeaderElectionError(
                f"the renew deadline must be longer than {_JITTER} x the retry period"
            )


@dataclass(frozen=True)
class LeaseRecord:
    """What a Lease's spec says about its holder; an empty holder is a released lease."""

    holder: str
    duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int = 0


def claim(
    current: LeaseRecord | None,
    unchanged_for: float,
    identity: str,
    timing: LeaseTiming,
    now: datetime,
) -> LeaseRecord | None:
    """The record to write to lead from `now`, or None while another holder's lease runs.

    `unchanged_for` is how long (seconds, on this replica's clock) `current` has been seen
    as it is: a holder's own renew times are never compared with this clock.
    """
    seconds = int(timing.lease_duration.total_seconds())
    if current is None:
        return LeaseRecord(identity, seconds, now, now, 0)
    if current.holder == identity:
        return replace(current, duration_seconds=seconds, renew_time=now)
    if current.holder and unchanged_for < current.duration_seconds:
        return None
    return LeaseRecord(identity, seconds, now, now, current.transitions + 1)


def released(current: LeaseRecord, now: datetime) -> LeaseRecord:
    """The record a leader stepping down writes: no holder, expiring in a second."""
    return replace(current, holder="", duration_seconds=1, renew_time=now)


class LeaseStore(Protocol):
    """Where the record lives; every write is conditional on the version read."""

    def read(self) -> tuple[LeaseRecord, str] | None:
        """The record and its resourceVersion; None when there is no Lease yet."""

    def create(self, record: LeaseRecord) -> bool:
        """False when someone else created it first."""

    def replace(self, record: LeaseRecord, version: str) -> bool:
        """False when it changed since `version` was read."""


@dataclass
class _Observed:
    record: LeaseRecord | None = None
    since: float = 0.0


class LeaderElector:
    """Tries to hold the lease every retry period; says whether this replica leads now.

    `on_started` runs when leadership is won, `on_lost` when a leader fails to renew
    within the renew deadline (the service must then stop acting at once).
    """

    def __init__(
        self,
        store: LeaseStore,
        identity: str,
        timing: LeaseTiming,
        now: Callable[[], datetime],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store, self.identity, self.timing = store, identity, timing
        self._now, self._monotonic = now, monotonic
        self._observed = _Observed()
        self._renewed_at: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.on_started: Callable[[], None] = lambda: None
        self.on_lost: Callable[[], None] = lambda: None

    @property
    def holder(self) -> str:
        """Who held the lease at the last attempt ('' when no one)."""
        record = self._observed.record
        return record.holder if record is not None else ""

    def is_leader(self) -> bool:
        """True while the last renewal is within the renew deadline."""
        if self._renewed_at is None:
            return False
        return self._monotonic() - self._renewed_at < self.timing.renew_deadline.total_seconds()

    def step(self) -> None:
        """One attempt to acquire or renew; the loop calls it every retry period."""
        was_leading = self._renewed_at is not None
        if self._attempt():
            self._renewed_at = self._monotonic()
            if not was_leading:
                LOG.info("%s leads (lease %s)", self.identity, self.store)
                self.on_started()
        elif was_leading and not self.is_leader():
            self._renewed_at = None
            LOG.error("%s could not renew the lease within the renew deadline", self.identity)
            self.on_lost()

    def _attempt(self) -> bool:
        try:
            found = self.store.read()
            record, version = found if found is not None else (None, "")
            if record != self._observed.record:
                self._observed = _Observed(record, self._monotonic())
            unchanged_for = self._monotonic() - self._observed.since
            wanted = claim(record, unchanged_for, self.identity, self.timing, self._now())
            if wanted is None:
                return False
            written = (
                self.store.create(wanted) if record is None else self.store.replace(wanted, version)
            )
        except Exception as error:  # an unreachable API server is a failed attempt, not a crash
            self.last_error = str(error)
            LOG.warning("lease attempt failed: %s", error)
            return False
        self.last_error = None
        if written:
            self._observed = _Observed(wanted, self._monotonic())
        return written

    def release(self) -> None:
        """Step down so a standby takes over at its next attempt, not a lease later."""
        leading = self._renewed_at is not None
        self._renewed_at = None
        if not leading:
            return
        try:
            found = self.store.read()
            if found is not None and found[0].holder == self.identity:
                self.store.replace(released(found[0], self._now()), found[1])
        except Exception as error:  # the lease then simply runs out
            LOG.warning("could not release the lease: %s", error)

    def start(self) -> LeaderElector:
        """Attempt in a daemon thread every retry period until `stop`."""

        def loop() -> None:
            while not self._stop.is_set():
                self.step()
                self._stop.wait(self.timing.retry_period.total_seconds())

        self._thread = threading.Thread(target=loop, name="tailor-leader", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the loop, then release the lease if held."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timing.retry_period.total_seconds() + 10)
        self.release()
