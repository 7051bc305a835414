"""pytest plugin: the real helm CLI (built by build-helm.sh) and the chart in deploy/helm.

Fixture `helm` (session): a `Helm` that runs the cached binary with its own config and
cache folders, never the user's. Without Go (and no cached helm) the tests that use it
are skipped, on CI (CI=true) failed, as the real-cluster fixtures do.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster import toolchain
from tests.cluster.fixtures import _unavailable
from tests.cluster.rawapi import Json

DEPLOY_TESTS = Path(__file__).resolve().parent
BUILD_SCRIPT = DEPLOY_TESTS / "build-helm.sh"
GO_MODULE = DEPLOY_TESTS / "helmtool" / "go.mod"
CHART = DEPLOY_TESTS.parents[1] / "deploy" / "helm" / "kube-tailor"
RELEASE = "kube-tailor"
NAMESPACE = "kube-tailor"
_GO_MISSING_EXIT = 3


def helm_version() -> str:
    """The helm.sh/helm/v3 version the Go module pins, e.g. v3.22.0."""
    for line in GO_MODULE.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[:2] == ["require", "helm.sh/helm/v3"]:
            return parts[2]
    raise toolchain.ToolMissing(f"no 'require helm.sh/helm/v3' line in {GO_MODULE}")


def helm_binary() -> Path:
    """The helm binary, built (cold: minutes) or reused from the cache without Go."""
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False
    )
    if result.returncode == _GO_MISSING_EXIT:
        raise toolchain.ToolMissing(
            f"the chart tests need Go to build helm {helm_version()} (Go 1.26+ on PATH): "
            f"{result.stderr.strip()}"
        )
    if result.returncode != 0:
        raise RuntimeError(
            f"{BUILD_SCRIPT} failed with exit code {result.returncode}:\n{result.stderr[-4000:]}"
        )
    binary = Path(result.stdout.strip().splitlines()[-1])
    if not binary.is_file():
        raise RuntimeError(f"{BUILD_SCRIPT} did not produce {binary}")
    return binary


@dataclass(frozen=True)
class Helm:
    """Runs `helm` with HELM_* folders under `home`, so no user setting leaks in."""

    binary: Path
    home: Path

    def run(self, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.home),
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_DATA_HOME": str(self.home / "data"),
        }
        if kubeconfig is not None:
            env["KUBECONFIG"] = str(kubeconfig)
        return subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, env=env, timeout=300
        )

    def template(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`helm template` of the chart as release kube-tailor in namespace kube-tailor."""
        return self.run("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *args)

    def render(self, *args: str) -> list[Json]:
        """The objects `helm template ARGS` renders; it must succeed."""
        done = self.template(*args)
        assert done.returncode == 0, done.stderr
        return [d for d in yaml.safe_load_all(done.stdout) if d]


def find(objects: list[Json], kind: str, name: str) -> Json:
    """The one object of `kind` named `name`."""
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def command(objects: list[Json], deployment: str) -> list[str]:
    """The rendered Deployment's container command, without `tailor`."""
    spec = find(objects, "Deployment", deployment)["spec"]["template"]["spec"]
    [container] = spec["containers"]
    program, *args = container["command"]
    assert program == "tailor"
    return list(args)


@pytest.fixture(scope="session")
def helm() -> Iterator[Helm]:
    """The real helm CLI, with throw-away HELM_* folders."""
    try:
        binary = helm_binary()
    except toolchain.ToolMissing as error:
        _unavailable(error)
        raise  # unreachable: skip / fail raise
    with tempfile.TemporaryDirectory(prefix="kube-tailor-helm-") as home:
        yield Helm(binary, Path(home))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that run helm carry the `helm` mark (so -m 'not helm' works)."""
    for item in items:
        if "helm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.helm)


def values_file(folder: Path, values: dict[str, Any]) -> Path:
    """A values file holding `values`, for `-f`."""
    path = folder / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return path
