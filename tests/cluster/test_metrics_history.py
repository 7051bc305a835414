"""Simulated usage written as OpenMetrics history that promtool can backfill."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from tests.cluster import toolchain
from tests.cluster.kubelet_sim.metrics import ContainerHistory, write_openmetrics_history
from tests.cluster.kubelet_sim.quantities import Resources
from tests.cluster.kubelet_sim.usage import UsageSeries

Mi = 2**20
START = 1_700_000_000.0


def history() -> list[ContainerHistory]:
    return [
        ContainerHistory(
            "shop",
            "web-1",
            "app",
            UsageSeries((0.5, 1.5), (200 * Mi, 300 * Mi), step_seconds=60.0, repeat=True),
            requests=Resources(250, 128 * Mi),
            limits=Resources(0, 512 * Mi),
            node="node-1",
            uid="uid-1",
        )
    ]


def test_history_integrates_cpu_into_a_counter_and_ends_with_eof() -> None:
    out = io.StringIO()
    written = write_openmetrics_history(
        out, history(), start=START, end=START + 180, scrape_interval=30
    )
    lines = out.getvalue().splitlines()
    assert lines[-1] == "# EOF"
    cpu = [line for line in lines if line.startswith("container_cpu_usage_seconds_total")]
    values = [float(line.split()[1]) for line in cpu]
    # 0.5 cores for the first minute, 1.5 for the second, 0.5 again (repeat)
    assert values == [0.0, 15.0, 30.0, 75.0, 120.0, 135.0, 150.0]
    memory = [line for line in lines if line.startswith("container_memory_working_set_bytes")]
    assert memory[2].split()[1:] == [str(300 * Mi), f"{START + 60:.3f}"]
    assert "# TYPE container_cpu_usage_seconds counter" in lines
    requests = [line for line in lines if line.startswith("kube_pod_container_resource_requests")]
    assert 'resource="cpu",unit="core"} 0.25 ' in requests[0]
    limits = [line for line in lines if line.startswith("kube_pod_container_resource_limits")]
    assert len(limits) == 7  # memory only: no CPU limit is set
    assert written == len(cpu) + len(memory) + len(requests) + len(limits)


@pytest.mark.prometheus
def test_promtool_backfills_the_history(tmp_path: Path) -> None:
    try:
        promtool = toolchain.ensure_debian_command("promtool", "prometheus")
    except toolchain.ToolMissing as error:
        if toolchain.on_ci():
            pytest.fail(f"CI must run the Prometheus tests: {error}")
        pytest.skip(str(error))
    source = tmp_path / "history.om"
    write_openmetrics_history(source, history(), start=START, end=START + 3600)
    data = tmp_path / "data"
    result = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    blocks = [p for p in data.iterdir() if (p / "meta.json").is_file()]
    assert blocks, result.stdout
