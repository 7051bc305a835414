"""Without Go (and no cached binaries) real-cluster tests are skipped with the reason,
except on CI where they fail: CI must never silently drop them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cluster.without_go import pytest_without_go

PROBE_TEST = """
def test_needs_a_cluster(kube_cluster):
    assert kube_cluster.server
"""


def run_without_go(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    return pytest_without_go(tmp_path, ci, "tests.cluster.fixtures", PROBE_TEST)


def test_without_go_the_real_cluster_tests_are_skipped_with_the_reason(tmp_path: Path) -> None:
    result = run_without_go(tmp_path, ci="")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "real-cluster tests need Go to build kube-apiserver" in result.stdout


def test_on_ci_a_missing_go_fails_the_real_cluster_tests(tmp_path: Path) -> None:
    result = run_without_go(tmp_path, ci="true")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 error" in result.stdout or "1 failed" in result.stdout
    assert "CI must run the real-cluster tests" in result.stdout
