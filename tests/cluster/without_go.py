"""Run a one-test pytest session with Go off PATH and an empty binary cache: how the tests
show that a tool the real-component tests build is skipped locally and fails on CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cluster.up import REPO_ROOT


def pytest_without_go(
    tmp_path: Path, ci: str, plugin: str, probe_test: str
) -> subprocess.CompletedProcess[str]:
    """`probe_test` (a test module's source) run with the fixtures of `plugin`, CI=`ci`."""
    (tmp_path / "test_probe.py").write_text(probe_test)
    path = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if not shutil.which("go", path=d)
    )
    env = dict(
        os.environ,
        PATH=path,
        CI=ci,
        PYTHONPATH=str(REPO_ROOT),
        KUBE_TAILOR_CACHE=str(tmp_path / "empty-cache"),
    )
    options = ["-p", plugin, "-p", "no:cacheprovider", "-rsf", "-q"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options, str(tmp_path / "test_probe.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
