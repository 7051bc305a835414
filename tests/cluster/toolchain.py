"""Find (or build / install) the programs a real control plane needs.

kube-apiserver, kube-controller-manager and kube-scheduler come from
build-controlplane.sh (Go, cached by version outside the repository); etcd
and Prometheus from Debian packages. A missing piece raises `ToolMissing` with
a reason the fixtures turn into a skip (or a failure on CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CLUSTER_DIR = Path(__file__).resolve().parent
BUILD_SCRIPT = CLUSTER_DIR / "build-controlplane.sh"
GO_MODULE = CLUSTER_DIR / "controlplane" / "go.mod"
CONTROL_PLANE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
_GO_MISSING_EXIT = 3


class ToolMissing(RuntimeError):
    """A program the real-cluster tests need is absent and cannot be provided."""


def on_ci() -> bool:
    """True on CI, where the real-cluster tests must run and never be skipped."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def kubernetes_version() -> str:
    """The k8s.io/kubernetes version the Go module pins, e.g. v1.36.3."""
    for line in GO_MODULE.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[:2] == ["require", "k8s.io/kubernetes"]:
            return parts[2]
    raise ToolMissing(f"no 'require k8s.io/kubernetes' line in {GO_MODULE}")


def control_plane_bin_dir() -> Path:
    """Folder with the three control-plane binaries, building them if needed.

    The build script reuses cached binaries (no Go needed then); a cold build
    takes several minutes, a rebuild from Go's build cache well under a minute.
    """
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False
    )
    if result.returncode == _GO_MISSING_EXIT:
        raise ToolMissing(
            "real-cluster tests need Go to build kube-apiserver "
            f"{kubernetes_version()} (Go 1.26+ on PATH): {result.stderr.strip()}"
        )
    if result.returncode != 0:
        raise RuntimeError(
            f"{BUILD_SCRIPT} failed with exit code {result.returncode}:\n{result.stderr[-4000:]}"
        )
    bin_dir = Path(result.stdout.strip().splitlines()[-1])
    for command in CONTROL_PLANE_COMMANDS:
        if not (bin_dir / command).is_file():
            raise RuntimeError(f"{BUILD_SCRIPT} did not produce {bin_dir / command}")
    return bin_dir


def _apt_get(*args: str) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = []
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            raise ToolMissing("not root and no sudo, cannot run apt-get")
        prefix = ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(
        [*prefix, "apt-get", *args], capture_output=True, text=True, env=env, check=False
    )


def ensure_debian_command(command: str, package: str) -> str:
    """Path of `command`, installing Debian `package` with apt-get when it is missing."""
    found = shutil.which(command)
    if found:
        return found
    if shutil.which("apt-get") is None:
        raise ToolMissing(f"{command} is missing and this machine has no apt-get to install it")
    update = _apt_get("update")
    install = _apt_get("install", "-y", "--no-install-recommends", package)
    found = shutil.which(command)
    if install.returncode != 0 or not found:
        raise ToolMissing(
            f"could not install {package} for {command}: apt-get update said "
            f"{update.stderr.strip()[-500:]!r}, install said {install.stderr.strip()[-1500:]!r}"
        )
    return found


def etcd_binary() -> str:
    """The etcd server from Debian's etcd-server package (installed when missing)."""
    return ensure_debian_command("etcd", "etcd-server")
