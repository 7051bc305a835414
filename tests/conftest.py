"""Shared test configuration: the real-cluster fixtures live in tests/cluster/."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.cluster.fixtures", "tests.cluster.prometheus", "tests.deploy.helm"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real traces beside the project (never copied into it)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data folder not found at {SHARED_DATA}")
    return SHARED_DATA
