"""Simulated usage written as OpenMetrics history through the product's writer, which
promtool can backfill and the product's Prometheus source reads back unchanged."""

from __future__ import annotations

import io
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recommender.data.prometheus import PrometheusSettings, load_prometheus_history
from tests.cluster import toolchain
from tests.cluster.kubelet_sim.metrics import (
    ContainerHistory,
    history_frame,
    write_openmetrics_history,
)
from tests.cluster.kubelet_sim.quantities import Resources
from tests.cluster.kubelet_sim.usage import UsageSeries

Mi = 2**20
START = 1_699_999_200.0  # a whole hour, so every window sits on the source grid


def history() -> list[ContainerHistory]:
    return [
        ContainerHistory(
            "shop",
            "web-1",
            "app",
            UsageSeries((0.5, 1.5), (200 * Mi, 300 * Mi), step_seconds=60.0, repeat=True),
            requests=Resources(250, 128 * Mi),
            limits=Resources(0, 512 * Mi),
        )
    ]


def sample_lines(text: str, metric: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(metric + "{")]


def test_history_integrates_cpu_into_a_counter_and_ends_with_eof() -> None:
    out = io.StringIO()
    written = write_openmetrics_history(
        out, history(), start=START, end=START + 180, scrape_interval=30
    )
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[-1] == "# EOF"
    cpu = sample_lines(text, "container_cpu_usage_seconds_total")
    # 0.5 cores for the first minute, 1.5 for the second, 0.5 again (repeat);
    # the counter starts at 0 at START and is sampled at each window's end.
    assert [float(line.split()[1]) for line in cpu] == [0.0, 15.0, 30.0, 75.0, 120.0, 135.0, 150.0]
    assert [line.split()[2] for line in cpu] == [str(int(START) + 30 * i) for i in range(7)]
    # Labels a real cAdvisor has, and that the Prometheus source filters on.
    assert 'image="registry.local/app:history"' in cpu[0]
    memory = sample_lines(text, "container_memory_working_set_bytes")
    assert memory[2].split()[1:] == [str(300 * Mi), str(int(START) + 60)]
    assert "# TYPE container_cpu_usage_seconds counter" in lines
    requests = sample_lines(text, "kube_pod_container_resource_requests")
    assert 'resource="cpu",unit="core"} 0.25 ' in requests[0]
    limits = sample_lines(text, "kube_pod_container_resource_limits")
    assert len(limits) == 6  # one per window, memory only: no CPU limit is set
    restarts = sample_lines(text, "kube_pod_container_status_restarts_total")
    assert {line.split()[1] for line in restarts} == {"0"}
    assert written == len(cpu) + len(memory) + len(requests) + len(limits) + len(restarts)


def test_windows_across_a_step_boundary_average_cpu_and_keep_the_memory_peak() -> None:
    series = UsageSeries((0.5, 1.5, 0.25), (200 * Mi, 300 * Mi, 100 * Mi), step_seconds=60.0)
    frame = history_frame(
        [ContainerHistory("shop", "web-1", "app", series)],
        start=START,
        end=START + 270,
        interval=45,
    )
    # [0,45) 0.5 | [45,90) 15 s at 0.5 + 30 s at 1.5 | [90,135) 30 s at 1.5 + 15 s
    # at 0.25 | then 0.25 held (no repeat); memory is each window's largest step.
    expected = [0.5, (7.5 + 45) / 45, (45 + 3.75) / 45, 0.25, 0.25, 0.25]
    assert frame["cpu"].tolist() == pytest.approx(expected, rel=1e-12)
    assert (frame["memory"] / Mi).tolist() == [200, 300, 300, 100, 100, 100]
    assert frame["cpu_request"].isna().all()


def test_a_named_workload_becomes_the_pods_owner() -> None:
    out = io.StringIO()
    named = ContainerHistory(
        "shop", "web-7d9c5b", "app", UsageSeries.constant(0.1, Mi), workload="web"
    )
    write_openmetrics_history(out, [named], start=START, end=START + 60)
    owners = sample_lines(out.getvalue(), "kube_pod_owner")
    assert len(owners) == 2
    assert 'owner_kind="ReplicaSet",owner_name="web-' in owners[0]


def test_a_fractional_scrape_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="whole number of seconds"):
        write_openmetrics_history(
            io.StringIO(), history(), start=START, end=START + 60, scrape_interval=2.5
        )


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


@pytest.mark.prometheus
def test_the_prometheus_source_reads_the_simulated_history_back(prometheus_server: Any) -> None:
    """Backfilled simulator history, read by the product's source: same windows."""
    out = io.StringIO()
    write_openmetrics_history(out, history(), start=START, end=START + 600, scrape_interval=30)
    instance = prometheus_server.start(out.getvalue())
    settings = PrometheusSettings(
        url=instance.url,
        start=datetime.fromtimestamp(START, UTC),
        end=datetime.fromtimestamp(START + 600, UTC),
        step="PT30S",
        retries=0,
    )
    usage, events = load_prometheus_history(settings)
    expected = history_frame(history(), start=START, end=START + 600, interval=30)
    assert len(usage) == len(expected) == 20
    np.testing.assert_allclose(usage["cpu"], expected["cpu"], rtol=1e-9)
    assert usage["memory"].tolist() == expected["memory"].tolist()
    assert usage["cpu_request"].tolist() == [0.25] * 20
    assert usage["memory_limit"].tolist() == [512.0 * Mi] * 20
    assert set(usage["workload"]) == {"web-1"}
    assert events.empty
