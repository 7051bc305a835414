"""`--leader-elect` and its timings, upstream's flags, for the services that act on the cluster.

`tailor recommender` and `tailor follow` may then run as several replicas: one works, the
others stand by and take over within a lease duration when it dies (at once when it is
stopped, as it releases the lease). The webhook needs none: every replica may answer.
"""

from __future__ import annotations

import contextlib
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from tailor.cli.service import duration_flag, namespaced_name_flag
from tailor.kube import Cluster, ClusterError
from tailor.leader import LeaderElectionError, LeaderElector, LeaseTiming
from tailor.lease import ApiLease
from tailor.names import InvalidName, namespace_name, object_name
from tailor.status_lease import STATUS_LEASE

_IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
FALLBACK_NAMESPACE = "kube-tailor"

# upstream's defaults (client-go's): every command with --leader-elect takes them from here
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = "15s", "10s", "2s"

LeaderElect = Annotated[
    bool,
    typer.Option(
        "--leader-elect",
        help="Work only while holding a Lease, so several replicas can run (hot standbys).",
    ),
]
LeaseDuration = Annotated[
    str,
    typer.Option(
        "--leader-elect-lease-duration", help="How long standbys wait on an unrenewed lease."
    ),
]
RenewDeadline = Annotated[
    str,
    typer.Option(
        "--leader-elect-renew-deadline", help="A leader that cannot renew this long stops."
    ),
]
RetryPeriod = Annotated[
    str, typer.Option("--leader-elect-retry-period", help="Time between attempts to lead.")
]
LeaseName = Annotated[
    str | None,
    typer.Option(
        "--leader-elect-resource-name", help="The Lease's name (default tailor-COMPONENT)."
    ),
]
LeaseNamespace = Annotated[
    str | None,
    typer.Option(
        "--leader-elect-resource-namespace",
        help="The Lease's namespace (default: the pod's own, else kube-tailor).",
    ),
]


@dataclass(frozen=True)
class Election:
    """Which Lease a replica competes for, as whom, and on which timings."""

    namespace: str
    name: str
    identity: str
    timing: LeaseTiming

    def elector(self, cluster: Cluster) -> LeaderElector:
        lease = ApiLease(cluster.core.api_client, self.namespace, self.name)
        return LeaderElector(lease, self.identity, self.timing, lambda: datetime.now(UTC))


def own_namespace() -> str:
    try:
        return _IN_CLUSTER_NAMESPACE.read_text().strip() or FALLBACK_NAMESPACE
    except OSError:
        return FALLBACK_NAMESPACE


def election(
    component: str,
    enabled: bool,
    lease_duration: str,
    renew_deadline: str,
    retry_period: str,
    name: str | None,
    namespace: str | None,
) -> Election | None:
    """The election the flags ask for (None without --leader-elect); bad timings are exit 2."""
    if not enabled:
        return None
    try:
        timing = LeaseTiming(
            duration_flag(lease_duration, "--leader-elect-lease-duration"),
            duration_flag(renew_deadline, "--leader-elect-renew-deadline"),
            duration_flag(retry_period, "--leader-elect-retry-period"),
        )
    except LeaderElectionError as error:
        raise typer.BadParameter(str(error), param_hint="--leader-elect-*") from None
    name = _checked(object_name, name or f"tailor-{component}", "--leader-elect-resource-name")
    namespace = _checked(
        namespace_name, namespace or own_namespace(), "--leader-elect-resource-namespace"
    )
    # the pod's name is its hostname; the suffix tells a restarted container from its past
    identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    return Election(namespace, name, identity, timing)


def _checked(rule: Callable[[str], str], text: str, option: str) -> str:
    """A name the API server will take, else exit 2 now rather than a refused Lease forever."""
    try:
        return rule(text)
    except InvalidName as error:
        raise typer.BadParameter(str(error), param_hint=option) from None


@contextlib.contextmanager
def held_once(chosen: Election | None, cluster: Cluster) -> Iterator[str | None]:
    """For `--once`: one attempt at the lease, released after the pass.

    Yields None when the pass may run, else who holds the lease (a CronJob's one-off pass
    must not act beside the service's leader); an unreachable API server is ClusterError.
    """
    if chosen is None:
        yield None
        return
    elector = chosen.elector(cluster)
    elector.step()
    if elector.last_error is not None:
        raise ClusterError(
            f"cannot take Lease {chosen.namespace}/{chosen.name}: {elector.last_error}"
        )
    if not elector.is_leader():
        yield elector.holder
        return
    try:
        yield None
    finally:
        elector.release()


def status_lease_flag(text: str | None, option: str) -> tuple[str, str]:
    """The webhook's status Lease (`tailor.status_lease`) as NAMESPACE/NAME: where the webhook
    renews it and the updater reads it; by default in the pod's own namespace."""
    return namespaced_name_flag(text or f"{own_namespace()}/{STATUS_LEASE}", option)
