"""`make demo-cluster`, short: the three services on the real control plane resize a pod of
the demo fleet in place (same UID), one resize is Deferred by the kubelet until a job ends
and then applied, and the webhook sizes a new pod."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import toolchain

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus, pytest.mark.slow]
PROJECT = Path(__file__).resolve().parents[2]


def test_the_demo_resizes_in_place_defers_one_and_sizes_new_pods(tmp_path: Path) -> None:
    toolchain.control_plane_bin_dir()  # built (or cached) before the demo's clock starts
    # the live view as well (its last frame is printed when stdout is not a terminal),
    # wide enough that a pod's row stays on one line
    command = [sys.executable, "-m", "tests.cluster.demo", "--until-shown"]
    done = subprocess.run(
        [*command, "--minutes", "6", "--state-dir", str(tmp_path)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "220"},
    )
    logs = "\n".join(p.read_text()[-3000:] for p in (tmp_path / "logs").glob("*.log"))
    assert done.returncode == 0, done.stdout + done.stderr + logs
    resized = int(re.search(r"in-place resizes seen: (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert resized >= 1
    assert "(same UID)" in done.stdout
    sized = int(re.search(r"sized by the webhook at creation: (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert sized >= 1
    deferred = re.search(r"resizes Deferred by the kubelet, then applied: (\d+)", done.stdout)
    assert deferred and int(deferred.group(1)) >= 1, done.stdout
    assert "Node didn't have enough resource: cpu" in done.stdout  # the kubelet's reason
    [row] = [line for line in done.stdout.splitlines() if "│ queue-" in line]
    assert "Deferred by the kubelet, then applied" in row  # the live view's pod row
