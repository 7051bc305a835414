"""`python -m tests.cluster.up` (make cluster-up / cluster-down) starts and stops by PID."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import toolchain
from tests.cluster.processes import pid_alive
from tests.cluster.up import REPO_ROOT

pytestmark = pytest.mark.cluster


def run_up(state_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.cluster.up", f"--state-dir={state_dir}", *args],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_cluster_up_prints_the_kubeconfig_and_cluster_down_stops_every_process(
    tmp_path: Path,
) -> None:
    try:
        toolchain.control_plane_bin_dir()
    except toolchain.ToolMissing as error:
        if toolchain.on_ci():
            pytest.fail(f"CI must run the real-cluster tests: {error}")
        pytest.skip(str(error))
    state_dir = tmp_path / "cluster"
    started = run_up(state_dir, "start", "--apiserver-only", "--nodes=1")
    try:
        assert started.returncode == 0, started.stderr
        kubeconfig = state_dir / "kubeconfig"
        assert f"export KUBECONFIG={kubeconfig}" in started.stdout
        assert kubeconfig.is_file()
        state = json.loads((state_dir / "state.json").read_text())
        names = [p["name"] for p in state["processes"]]
        assert names == ["etcd", "kube-apiserver", "kubelet-sim"]

        status = run_up(state_dir, "status")
        assert status.returncode == 0, status.stdout
        assert "(ready)" in status.stdout
    finally:
        stopped = run_up(state_dir, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert not any(pid_alive(int(p["pid"])) for p in state["processes"])
    assert not (state_dir / "state.json").exists()
    assert (state_dir / "logs" / "kube-apiserver.log").is_file()  # logs are kept
    assert run_up(state_dir, "status").returncode == 1
