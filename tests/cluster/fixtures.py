"""pytest plugin: a real Kubernetes control plane and a kubelet simulator.

Fixtures (see tests/cluster/README section in the project README):
- kube_cluster (session): etcd + kube-apiserver 1.36 on 127.0.0.1.
- kube_cluster_full (session): another cluster that also runs
  kube-controller-manager and kube-scheduler.
- kube_cluster_factory (session): `factory(ClusterOptions(...))` for other
  variants (e.g. resize_validator=False: the API of Kubernetes <= 1.35).
- kubelet_sim (function): a KubeletSimulator bound to kube_cluster;
  kubelet_sim_factory (function): `factory(cluster, **options)` for others.
- kube_namespace (function): a fresh namespace in kube_cluster.

Clusters start lazily, once per session and option set, and are stopped by
PID at the end of the session. Their logs are kept (and the folder printed)
when a test failed. Without Go the tests are skipped, on CI (CI=true) failed.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import toolchain
from tests.cluster.controlplane import ClusterOptions, ControlPlane, wait_for_default_namespace
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.rawapi import RawApi

CLUSTER_FIXTURES = frozenset(
    {
        "kube_cluster",
        "kube_cluster_full",
        "kube_cluster_factory",
        "kubelet_sim",
        "kubelet_sim_factory",
        "kube_namespace",
        "kube_api",
        "full_namespace",
    }
)
_KEPT_LOGS = pytest.StashKey[list[Path]]()
_POOL = pytest.StashKey["ClusterPool"]()


class ClusterPool:
    """The session's control planes, one per ClusterOptions, started on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clusters: dict[ClusterOptions, ControlPlane] = {}
        self.failures: dict[ClusterOptions, BaseException] = {}

    def get(self, options: ClusterOptions) -> ControlPlane:
        if options in self.failures:  # do not retry a slow failing start for every test
            raise self.failures[options]
        if options not in self.clusters:
            try:
                bin_dir = toolchain.control_plane_bin_dir()
                name = "full" if options.controllers else "apiserver"
                if not options.resize_validator:
                    name += "-no-resize-validator"
                plane = ControlPlane(self.root / name, bin_dir, toolchain.etcd_binary(), options)
                plane.start()
                wait_for_default_namespace(plane)
            except BaseException as error:
                self.failures[options] = error
                raise
            self.clusters[options] = plane
        return self.clusters[options]

    def stop_all(self) -> None:
        for plane in self.clusters.values():
            plane.stop()
        self.clusters.clear()


def _unavailable(error: toolchain.ToolMissing) -> None:
    """Skip locally, fail on CI: CI must never silently drop the real-cluster tests."""
    if toolchain.on_ci():
        pytest.fail(f"CI must run the real-cluster tests: {error}", pytrace=False)
    pytest.skip(str(error))


def _cluster(pool: ClusterPool, options: ClusterOptions) -> ControlPlane:
    try:
        return pool.get(options)
    except toolchain.ToolMissing as error:
        _unavailable(error)
        raise  # unreachable: skip / fail raise


@pytest.fixture(scope="session")
def _kube_cluster_pool(request: pytest.FixtureRequest) -> Iterator[ClusterPool]:
    root = Path(tempfile.mkdtemp(prefix="kube-tailor-cluster-"))
    pool = ClusterPool(root)
    request.config.stash[_POOL] = pool
    try:
        yield pool
    finally:
        pool.stop_all()
        failed = request.session.testsfailed or pool.failures
        if failed and any(root.iterdir()):
            request.config.stash.setdefault(_KEPT_LOGS, []).append(root)
        else:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def kube_cluster(_kube_cluster_pool: ClusterPool) -> ControlPlane:
    """etcd + kube-apiserver: .kubeconfig, .server, .ca_file, .api_client(), .log_dir."""
    return _cluster(_kube_cluster_pool, ClusterOptions())


@pytest.fixture(scope="session")
def kube_cluster_full(_kube_cluster_pool: ClusterPool) -> ControlPlane:
    """A separate cluster with kube-controller-manager and kube-scheduler too."""
    return _cluster(_kube_cluster_pool, ClusterOptions(controllers=True))


@pytest.fixture(scope="session")
def kube_cluster_factory(
    _kube_cluster_pool: ClusterPool,
) -> Callable[[ClusterOptions], ControlPlane]:
    """`factory(ClusterOptions(...))` -> the session's cluster with those options."""
    return lambda options: _cluster(_kube_cluster_pool, options)


@pytest.fixture
def kubelet_sim_factory() -> Iterator[Callable[..., KubeletSimulator]]:
    """`factory(cluster, **KubeletSimulator options)` -> a started simulator, stopped
    (its nodes and their pods deleted) after the test."""
    started: list[KubeletSimulator] = []

    def make(cluster: ControlPlane, **options: Any) -> KubeletSimulator:
        simulator = KubeletSimulator(cluster.api_client(), **options).start()
        started.append(simulator)
        return simulator

    yield make
    errors = []
    for simulator in started:
        try:
            simulator.stop()
        except Exception as error:
            errors.append(error)
        finally:
            simulator.api_client.close()
    if errors:
        raise errors[0]


@pytest.fixture
def kubelet_sim(
    kube_cluster: ControlPlane, kubelet_sim_factory: Callable[..., KubeletSimulator]
) -> KubeletSimulator:
    """A kubelet simulator bound to kube_cluster (register nodes with .register_node)."""
    return kubelet_sim_factory(kube_cluster)


@dataclass(frozen=True)
class FullNamespace:
    """A fresh namespace in kube_cluster_full, its admin API and a kubelet simulator."""

    cluster: ControlPlane
    api: RawApi
    name: str
    sim: KubeletSimulator


@pytest.fixture
def full_namespace(
    kube_cluster_full: ControlPlane,
    kubelet_sim_factory: Callable[..., KubeletSimulator],
    request: pytest.FixtureRequest,
) -> Iterator[FullNamespace]:
    """Where tests run Deployments: controllers and scheduler, simulated nodes."""
    sim = kubelet_sim_factory(kube_cluster_full)
    name = namespace_name(request.node.name)
    with kube_cluster_full.api_client() as client:
        api = RawApi(client)
        create_namespace(api, name)
        yield FullNamespace(kube_cluster_full, api, name, sim)
        with contextlib.suppress(Exception):
            api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def kube_api(kube_cluster: ControlPlane) -> Iterator[RawApi]:
    """Plain-JSON calls to kube_cluster as cluster admin."""
    with kube_cluster.api_client() as client:
        yield RawApi(client)


@pytest.fixture
def kube_namespace(kube_cluster: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of its own for this test in kube_cluster, deleted afterwards."""
    name = namespace_name(request.node.name)
    with kube_cluster.api_client() as client:
        api = RawApi(client)
        create_namespace(api, name)
        yield name
        with contextlib.suppress(Exception):
            api.delete(f"/api/v1/namespaces/{name}")


def namespace_name(test_name: str) -> str:
    """A valid, unique-enough namespace name derived from a test name."""
    stem = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"{stem or 't'}-{uuid.uuid4().hex[:6]}"


def create_namespace(api: RawApi, name: str) -> None:
    api.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use a real cluster carry the `cluster` mark (so -m 'not cluster' works)."""
    for item in items:
        if CLUSTER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """On a failed real-cluster test, name the folder with the process logs."""
    report = yield
    if report.failed and CLUSTER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        pool = item.config.stash.get(_POOL, None)
        if pool is not None and (pool.clusters or pool.failures):
            lines = [f"{plane.log_dir}" for plane in pool.clusters.values()]
            lines = lines or [str(pool.root)]
            report.sections.append(("kube-tailor cluster logs (kept)", "\n".join(lines)))
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for root in config.stash.get(_KEPT_LOGS, []):
        terminalreporter.write_line(f"kube-tailor: real-cluster process logs kept in {root}")
