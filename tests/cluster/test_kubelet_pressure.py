"""The simulator's memory pressure (PSI): stall seconds rising as the working set nears
the memory limit, reset with the container, exported under cAdvisor's names."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.kubelet_sim.metrics import ContainerSample, SimulatorCollector
from tests.cluster.kubelet_sim.quantities import Resources
from tests.cluster.kubelet_sim.usage import UsageSeries, memory_pressure_shares
from tests.cluster.test_kubelet_engine import FakeServer, engine_with_node, make_pod

Mi = 2**20


def test_pressure_is_nil_far_from_the_limit_and_rises_towards_it() -> None:
    limit = 1000 * Mi
    assert memory_pressure_shares(500 * Mi, limit) == (0.0, 0.0)
    assert memory_pressure_shares(800 * Mi, limit) == (0.0, 0.0)
    assert memory_pressure_shares(10_000 * Mi, None) == (0.0, 0.0)  # no limit: no reclaim
    shares = [memory_pressure_shares(m * Mi, limit) for m in (850, 900, 950, 1000)]
    stalled = [full for _, full in shares]
    assert stalled == sorted(stalled) and len(set(stalled)) == 4  # strictly rising
    assert abs(stalled[1] - 0.15) < 1e-9 and abs(stalled[-1] - 0.6) < 1e-9
    assert all(some >= full for some, full in shares)  # `some` counts every `full` stall


def test_stall_seconds_accumulate_near_the_limit_and_start_over_after_a_kill() -> None:
    engine = engine_with_node()
    server = FakeServer(
        engine,
        make_pod("tight", cpu="100m", memory_limit="256Mi"),
        make_pod("roomy", cpu="100m", memory_limit="1Gi"),
    )
    # 90 % of the 256 Mi limit for 10 s, then above it: OOM-killed
    climb = UsageSeries((0.1,), (int(0.9 * 256 * Mi), 300 * Mi), step_seconds=10.0)
    engine.set_usage("default", "*", "app", climb)
    server.sync(0.0)
    for _ in range(9):
        server.sync(1.0)
    samples = {s.pod: s for s in engine.samples()}
    assert abs(samples["tight"].memory_stalled_seconds - 9 * 0.15) < 1e-6
    assert samples["tight"].memory_waiting_seconds > samples["tight"].memory_stalled_seconds
    assert samples["roomy"].memory_stalled_seconds == 0.0  # 230 Mi of 1 Gi: no pressure
    server.sync(2.0)  # 300 Mi > 256 Mi: killed, a new cgroup with new counters
    tight = {s.pod: s for s in engine.samples()}["tight"]
    assert tight.last_terminated_reason == "OOMKilled"
    assert tight.memory_stalled_seconds == 0.0


def test_stall_counters_are_exported_under_cadvisors_names() -> None:
    sample = ContainerSample(
        namespace="shop",
        pod="web",
        uid="uid-web",
        container="app",
        node="node-1",
        cpu_seconds=1.0,
        memory_bytes=200 * Mi,
        requests=Resources(100, 128 * Mi),
        limits=Resources(0, 256 * Mi),
        restart_count=0,
        last_terminated_reason=None,
        image="registry.local/app:1",
        container_id="web-app-0",
        memory_waiting_seconds=4.5,
        memory_stalled_seconds=2.25,
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SimulatorCollector(lambda: [sample]))
    text = generate_latest(registry).decode()
    found = {
        s.name: (s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("container_pressure_")
    }
    waiting_labels, waiting = found["container_pressure_memory_waiting_seconds_total"]
    stalled_labels, stalled = found["container_pressure_memory_stalled_seconds_total"]
    assert (waiting, stalled) == (4.5, 2.25)
    for labels in (waiting_labels, stalled_labels):
        assert labels == {
            "namespace": "shop",
            "pod": "web",
            "container": "app",
            "image": "registry.local/app:1",
            "name": "web-app-0",
        }
