"""Leader election on the real API server: the Lease's own concurrency rules, and replicas
of `tailor follow` of which exactly one works, handing over on stop, death or deposition."""

from __future__ import annotations

import contextlib
import signal
import socket
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tailor.kube import api_client_from
from tailor.leader import LeaseRecord
from tailor.lease import ApiLease, micro_time
from tests.cluster.controlplane import ControlPlane
from tests.cluster.processes import TailorProcess, free_port, tailor_process
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.waiting import wait_until

LEASE_SECONDS = 6
NOW = datetime(2026, 11, 23, 12, 0, 0, 123456, tzinfo=UTC)


def leases(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def test_the_lease_takes_our_times_and_refuses_a_write_from_a_stale_read(
    kube_cluster: ControlPlane, kube_api: RawApi, kube_namespace: str
) -> None:
    lease = ApiLease(api_client_from(kube_cluster.kubeconfig), kube_namespace, "race")
    assert lease.read() is None
    mine = LeaseRecord("a", 15, NOW, NOW, 0)
    assert lease.create(mine)
    assert not lease.create(LeaseRecord("b", 15, NOW, NOW, 0))  # 409: already there
    found = lease.read()
    assert found is not None
    assert found[0] == mine  # microseconds survive the API server's MicroTime
    stored = kube_api.get(f"{leases(kube_namespace)}/race")["spec"]
    assert stored["renewTime"] == micro_time(NOW) == "2026-11-23T12:00:00.123456Z"

    later = NOW + timedelta(seconds=2)
    assert lease.replace(LeaseRecord("a", 15, NOW, later, 0), found[1])
    assert not lease.replace(LeaseRecord("b", 15, later, later, 1), found[1])  # stale read
    current = lease.read()
    assert current is not None and current[0].holder == "a"


def metric(port: int, name: str) -> float | None:
    """One sample of the replica's /metrics, None while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            text = answer.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} in /metrics")


LEADING = "tailor_updater_leader"
OK = 'tailor_updater_passes_total{outcome="ok"}'
STANDBY = 'tailor_updater_passes_total{outcome="standby"}'


class Replicas:
    """`tailor follow` replicas competing for one Lease in the test's namespace."""

    def __init__(self, cluster: ControlPlane, namespace: str, tmp: Path) -> None:
        self.cluster, self.namespace, self.tmp = cluster, namespace, tmp
        self.schedule = tmp / "schedule.json"
        self.schedule.write_text("[]", encoding="utf-8")
        self.stack = contextlib.ExitStack()
        self.ports: dict[str, int] = {}
        self.processes: dict[str, TailorProcess] = {}

    def start(self, name: str) -> None:
        port = free_port()
        command = [
            "follow",
            f"--schedule={self.schedule}",
            f"--kubeconfig={self.cluster.kubeconfig}",
            "--interval=1s",
            f"--metrics-port={port}",
            "--leader-elect",
            f"--leader-elect-lease-duration={LEASE_SECONDS}s",
            "--leader-elect-renew-deadline=3s",
            "--leader-elect-retry-period=500ms",
            f"--leader-elect-resource-namespace={self.namespace}",
        ]
        log = self.tmp / f"{name}.log"
        self.processes[name] = self.stack.enter_context(tailor_process(command, log))
        self.ports[name] = port

    def leading(self) -> list[str]:
        return [n for n, port in self.ports.items() if metric(port, LEADING) == 1]

    def standing_by(self) -> list[str]:
        return [n for n, port in self.ports.items() if metric(port, LEADING) == 0]

    def holder(self, api: RawApi) -> str:
        return str(api.get(f"{leases(self.namespace)}/tailor-updater")["spec"]["holderIdentity"])

    def forget(self, name: str) -> None:
        del self.ports[name]


@pytest.fixture
def replicas(kube_cluster: ControlPlane, kube_namespace: str, tmp_path: Path) -> Iterator[Replicas]:
    group = Replicas(kube_cluster, kube_namespace, tmp_path)
    with group.stack:
        yield group


def settled(replicas: Replicas, count: int) -> tuple[str, list[str]] | None:
    """(the leader, the standbys) once every one of `count` replicas has taken its role."""
    leading, standing = replicas.leading(), replicas.standing_by()
    if len(leading) == 1 and len(standing) == count - 1:
        return leading[0], standing
    assert len(leading) <= 1, f"two leaders at once: {leading}"
    return None


def test_one_replica_works_and_a_stopped_leader_hands_over_at_once(
    replicas: Replicas, kube_api: RawApi
) -> None:
    replicas.start("a")
    replicas.start("b")
    leader, [standby] = wait_until(lambda: settled(replicas, 2), timeout=30, what="roles")
    assert replicas.holder(kube_api).startswith(f"{socket.gethostname()}_")
    wait_until(lambda: (metric(replicas.ports[standby], STANDBY) or 0) >= 3, what="standbys")
    assert metric(replicas.ports[standby], OK) == 0  # a standby never ran a pass
    assert (metric(replicas.ports[leader], OK) or 0) >= 1

    stopped = replicas.processes[leader].process
    begun = time.monotonic()
    stopped.send_signal(signal.SIGTERM)  # as the kubelet stops a pod: the lease is released
    assert stopped.wait(timeout=20) == 0
    replicas.forget(leader)
    wait_until(lambda: replicas.leading() == [standby], timeout=20, what="the standby leads")
    assert time.monotonic() - begun < LEASE_SECONDS  # it did not wait the lease out
    before = metric(replicas.ports[standby], OK) or 0
    wait_until(lambda: (metric(replicas.ports[standby], OK) or 0) > before, what="its passes")
    lease = kube_api.get(f"{leases(replicas.namespace)}/tailor-updater")["spec"]
    assert lease["leaseTransitions"] == 1


def test_a_dead_leader_is_waited_out_and_a_deposed_one_stops_at_once(
    replicas: Replicas, kube_api: RawApi
) -> None:
    replicas.start("a")
    wait_until(lambda: replicas.leading() == ["a"], timeout=30, what="a leads")
    replicas.start("b")
    wait_until(lambda: replicas.standing_by() == ["b"], timeout=30, what="b stands by")

    killed = replicas.processes["a"].process
    begun = time.monotonic()
    killed.send_signal(signal.SIGKILL)  # no chance to release
    killed.wait(timeout=10)
    replicas.forget("a")
    wait_until(lambda: replicas.leading() == ["b"], timeout=30, what="b leads")
    waited = time.monotonic() - begun
    assert LEASE_SECONDS - 1 <= waited < LEASE_SECONDS + 10

    # Someone else takes the lease by force (an operator, a partitioned peer's successor):
    # b cannot renew, and must stop acting within its renew deadline: it exits 1.
    path = f"{leases(replicas.namespace)}/tailor-updater"
    lease: Json = kube_api.get(path)
    now = micro_time(datetime.now(UTC))
    spec = {**lease["spec"], "holderIdentity": "operator", "renewTime": now}
    kube_api.replace(path, {**lease, "spec": {**spec, "leaseDurationSeconds": 3600}})
    deposed = replicas.processes["b"].process
    assert deposed.wait(timeout=20) == 1
    assert "lost the leader lease" in replicas.processes["b"].output()
