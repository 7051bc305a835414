"""The webhook's heartbeat: a Lease it renews, which the updater reads before evicting.

An evicted pod comes back with its template's requests unless the webhook sizes the
replacement, so an eviction while the webhook is down only restarts the pod. The
upstream admission controller renews a status Lease every 10 s and the upstream
updater does nothing while that Lease is over a minute old
(`--use-admission-controller-status`); kube-tailor's webhook renews its own Lease the
same way, and `tailor follow` withholds only its evictions meanwhile (an in-place
resize needs no webhook).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tailor.kube import ClusterError
from tailor.leader import LeaseRecord, LeaseStore

LOG = logging.getLogger("tailor.status_lease")
STATUS_LEASE = "tailor-admission-status"  # in the webhook's own namespace (kube-tailor)
RENEW_INTERVAL = timedelta(seconds=10)
STALE_AFTER = timedelta(minutes=1)


def stale_reason(record: LeaseRecord | None, now: datetime, where: str) -> str | None:
    """Why the webhook may be down (None: renewed within STALE_AFTER of `now`)."""
    if record is None:
        return f"the webhook's status Lease {where} does not exist"
    if record.renew_time is None:
        return f"the webhook's status Lease {where} was never renewed"
    age = now - record.renew_time
    if age > STALE_AFTER:
        return f"the webhook's status Lease {where} was last renewed {age} ago"
    return None


@dataclass(frozen=True)
class StatusCheck:
    """Reads the Lease once a pass: None while the webhook is up, else why not."""

    lease: LeaseStore

    def __call__(self, now: datetime) -> str | None:
        try:
            found = self.lease.read()
        except ClusterError as error:
            return f"cannot read the webhook's status Lease {self.lease}: {error}"
        return stale_reason(found[0] if found else None, now, str(self.lease))


class StatusHeartbeat:
    """One renewal per `beat()`, which the webhook calls every RENEW_INTERVAL from each
    replica (a conflict means another replica renewed it first: fine)."""

    def __init__(
        self,
        lease: LeaseStore,
        identity: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.lease, self.identity, self.clock = lease, identity, clock

    def beat(self) -> bool:
        """True when the API server took the renewal; failures are logged, not raised."""
        now = self.clock()
        try:
            found = self.lease.read()
            if found is None:
                stale = int(STALE_AFTER.total_seconds())  # the API server wants one > 0
                return self.lease.create(LeaseRecord(self.identity, stale, now, now))
            record, version = found
            renewed = LeaseRecord(
                self.identity, record.duration_seconds, record.acquire_time, now, record.transitions
            )
            return self.lease.replace(renewed, version)
        except ClusterError as error:
            LOG.warning("status Lease %s not renewed: %s", self.lease, error)
            return False
