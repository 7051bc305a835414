"""The pre-forked webhook against the real API server: workers share the port, one that dies
is replaced, one that holds too much memory is swapped without a refused review."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from admission.edge import listening_socket
from admission.events import Relayed
from admission.metrics import Batch
from admission.workers import Supervisor, WorkerConfig
from tests.admission.burst import populate, review_body
from tests.admission.https import answer, call, serving_pair
from tests.admission.test_admit import new_pod, review
from tests.cluster.certs import CertificateAuthority
from tests.cluster.controlplane import ControlPlane
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import namespace_name
from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until


class Recorded(Batch):
    """The parent's sink: what the workers relayed, and the passes of their watches."""

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[bool] = []
        self.events: list[Relayed] = []

    def record_pass(self, succeeded: bool, seconds: float) -> None:
        self.passes.append(succeeded)


@pytest.fixture
def workers(
    kube_cluster: ControlPlane, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Supervisor, CertificateAuthority, Recorded]]:
    ca, pair = serving_pair(tmp_path)
    config = WorkerConfig(pair.cert_file, pair.key_file, kube_cluster.kubeconfig)
    sock = listening_socket("127.0.0.1", 0)
    recorded = Recorded()
    limit = getattr(request, "param", None)
    supervisor = Supervisor(
        config, sock, 2, recorded, recorded.record_pass, limit, recorded.events.extend
    )
    supervisor.start()
    try:
        yield supervisor, ca, recorded
    finally:
        supervisor.stop()
        sock.close()


def post(supervisor: Supervisor, ca: CertificateAuthority) -> tuple[int, str]:
    port = supervisor.sock.getsockname()[1]
    return call(f"https://127.0.0.1:{port}/mutate", ca, review(new_pod()))


def test_two_workers_answer_relay_their_metrics_and_a_killed_one_is_replaced(
    workers: tuple[Supervisor, CertificateAuthority, Recorded],
) -> None:
    supervisor, ca, recorded = workers
    first = supervisor.pids
    assert len(first) == 2 and os.getpid() not in first
    for _ in range(20):
        status, text = post(supervisor, ca)
        assert status == 200 and answer(text)["allowed"] is True  # no VPA: unchanged
    wait_until(
        lambda: sum(kind == "review" for kind, _, _ in recorded.records) == 20,
        timeout=10,
        what="the workers' review metrics relayed to the parent",
    )
    assert {label for kind, label, _ in recorded.records if kind == "review"} == {"unchanged"}
    assert recorded.events == []  # nothing sized, nothing said
    os.kill(first[0], signal.SIGKILL)
    wait_until(
        lambda: supervisor.ready() and first[0] not in supervisor.pids,
        timeout=60,
        what="a new worker in place of the killed one",
    )
    assert len(supervisor.pids) == 2
    assert post(supervisor, ca)[0] == 200
    wait_until(lambda: True in recorded.passes, timeout=60, what="a watch pass relayed")


@pytest.mark.parametrize("workers", [1], indirect=True)  # 1 byte: every worker is too big
def test_a_worker_over_its_memory_limit_is_swapped_without_a_refused_review(
    workers: tuple[Supervisor, CertificateAuthority, Recorded],
) -> None:
    supervisor, ca, _ = workers
    first = set(supervisor.pids)
    statuses: list[int] = []
    stop = threading.Event()

    def keep_posting() -> None:
        while not stop.is_set():
            statuses.append(post(supervisor, ca)[0])

    poster = threading.Thread(target=keep_posting)
    poster.start()
    try:
        wait_until(  # a new worker lists the cluster before it serves: seconds each
            lambda: supervisor.recycled >= 1 and len(first & set(supervisor.pids)) < 2,
            timeout=300,
            what="a first worker replaced",
        )
    finally:
        stop.set()
        poster.join()
    assert statuses and set(statuses) == {200}


def test_the_workers_count_their_events_and_the_parent_gets_each_once(
    workers: tuple[Supervisor, CertificateAuthority, Recorded], kube_cluster: ControlPlane
) -> None:
    supervisor, ca, recorded = workers
    namespace = namespace_name("relayed-events")
    with kube_cluster.api_client() as client:
        install_crds(RawApi(client))
        populate(RawApi(client), 1, namespace)  # app0: its Deployment, ReplicaSet and VPA
    url = f"https://127.0.0.1:{supervisor.sock.getsockname()[1]}/mutate"

    def patched() -> bool:
        return bool(answer(call(url, ca, review_body(0, namespace=namespace))[1]).get("patch"))

    wait_until(patched, timeout=60, what="the workers' watches holding the new VPA")
    sized = 1 + sum(patched() for _ in range(30))
    wait_until(
        lambda: sum(event[4] for event in recorded.events) == sized,
        timeout=10,
        what="every sized pod's Event relayed to the parent",
    )
    assert {(e[0].kind, e[0].name, e[2]) for e in recorded.events} == {
        ("VerticalPodAutoscaler", "app0", "PodSized")
    }
    assert len(recorded.events) < sized  # counted: identical Events sent once per batch
