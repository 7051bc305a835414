"""`make cluster-up` / `make cluster-down`: the test control plane, by hand.

    python -m tests.cluster.up start [--apiserver-only] [--no-resize-validator]
                                     [--nodes 2] [--metrics-port 9400]
    python -m tests.cluster.up status
    python -m tests.cluster.up stop

Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a
kubelet simulator with N nodes, detached, with state, logs and the admin
kubeconfig in .cluster/ (gitignored). `stop` ends exactly the recorded PIDs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import ssl
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.cluster import toolchain
from tests.cluster.controlplane import ClusterOptions, ControlPlane, wait_for_default_namespace
from tests.cluster.processes import ManagedProcess, pid_alive, pid_command, stop_pid
from tests.cluster.rawapi import RawApi

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STATE_DIR = REPO_ROOT / ".cluster"
STATE_FILE = "state.json"


def _read_state(state_dir: Path) -> dict[str, Any] | None:
    path = state_dir / STATE_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _alive(process: dict[str, Any]) -> bool:
    """Alive and still the program we started (PIDs get reused)."""
    pid = int(process["pid"])
    expected = Path(os.path.realpath(process["exe"])).name
    return pid_alive(pid) and Path(pid_command(pid)).name == expected


def _print_access(state: dict[str, Any]) -> None:
    print(f"kubeconfig: {state['kubeconfig']}")
    print(f"export KUBECONFIG={state['kubeconfig']}")


def _start_simulator(
    plane: ControlPlane, nodes: int, metrics_port: int | None
) -> ManagedProcess | None:
    if nodes <= 0:
        return None
    argv = [sys.executable, "-m", "tests.cluster.kubelet_sim", f"--kubeconfig={plane.kubeconfig}"]
    argv += [f"--node=node-{i}:cpu=4,memory=8Gi,pods=110" for i in range(1, nodes + 1)]
    if metrics_port is not None:
        argv.append(f"--metrics-port={metrics_port}")
    simulator = ManagedProcess("kubelet-sim", argv, plane.log_dir / "kubelet-sim.log")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    simulator.start(tie_to_parent=False, env=env)

    def nodes_ready() -> bool:
        with plane.api_client() as client:
            items = RawApi(client).get("/api/v1/nodes")["items"]
        return len(items) >= nodes and not any(n["spec"].get("taints") for n in items)

    simulator.wait_ready(nodes_ready, timeout=60)
    return simulator


def start(args: argparse.Namespace) -> int:
    state_dir: Path = args.state_dir
    state = _read_state(state_dir)
    if state and all(_alive(p) for p in state["processes"]):
        print(f"cluster already running: {state['server']}")
        _print_access(state)
        return 0
    if state:
        stop(args)
    begun = time.monotonic()
    options = ClusterOptions(
        controllers=not args.apiserver_only, resize_validator=not args.no_resize_validator
    )
    try:
        bin_dir = toolchain.control_plane_bin_dir()
        etcd = toolchain.etcd_binary()
    except toolchain.ToolMissing as error:
        print(f"cannot start the cluster: {error}", file=sys.stderr)
        return 3
    for stale in ("pki", "etcd-data", "kube-controller-manager", "kube-scheduler"):
        shutil.rmtree(state_dir / stale, ignore_errors=True)
    plane = ControlPlane(state_dir, bin_dir, etcd, options, tie_to_parent=False)
    plane.start()
    wait_for_default_namespace(plane)
    state = plane.describe()
    try:
        simulator = _start_simulator(plane, args.nodes, args.metrics_port)
    except BaseException:
        plane.stop()
        raise
    if simulator is not None:
        state["processes"].append(
            {
                "name": "kubelet-sim",
                "pid": simulator.pid,
                "exe": sys.executable,
                "log": str(simulator.log_file),
            }
        )
    (state_dir / STATE_FILE).write_text(json.dumps(state, indent=2))
    print(f"cluster up in {time.monotonic() - begun:.1f}s: {state['server']}")
    print(f"logs: {state['log_dir']}")
    _print_access(state)
    return 0


def stop(args: argparse.Namespace) -> int:
    state_dir: Path = args.state_dir
    state = _read_state(state_dir)
    if state is None:
        print("no cluster state; nothing to stop")
        return 0
    for process in reversed(state["processes"]):
        if _alive(process):
            stop_pid(int(process["pid"]))
            print(f"stopped {process['name']} (pid {process['pid']})")
    for leftover in (STATE_FILE, "kubeconfig"):
        (state_dir / leftover).unlink(missing_ok=True)
    for leftover in ("pki", "etcd-data", "kube-controller-manager", "kube-scheduler"):
        shutil.rmtree(state_dir / leftover, ignore_errors=True)
    print(f"cluster down; logs kept in {state['log_dir']}")
    return 0


def status(args: argparse.Namespace) -> int:
    state = _read_state(args.state_dir)
    if state is None:
        print("cluster: not running")
        return 1
    healthy = True
    for process in state["processes"]:
        alive = _alive(process)
        healthy &= alive
        print(f"{process['name']:<24} pid {process['pid']:<8} {'running' if alive else 'DEAD'}")
    print(f"server: {state['server']} ({'ready' if _ready(state) else 'not ready'})")
    _print_access(state)
    return 0 if healthy else 1


def _ready(state: dict[str, Any]) -> bool:
    pki = Path(state["ca_file"]).parent
    context = ssl.create_default_context(cafile=state["ca_file"])
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    try:
        with urllib.request.urlopen(state["server"] + "/readyz", timeout=3, context=context) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.up")
    parser.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)
    commands = parser.add_subparsers(dest="command", required=True)
    start_parser = commands.add_parser("start", help="start the cluster (detached)")
    start_parser.add_argument("--apiserver-only", action="store_true")
    start_parser.add_argument("--no-resize-validator", action="store_true")
    start_parser.add_argument("--nodes", type=int, default=2, help="simulated nodes (0: none)")
    start_parser.add_argument("--metrics-port", type=int, default=None)
    commands.add_parser("stop", help="stop the recorded processes")
    commands.add_parser("status", help="show the recorded processes")
    args = parser.parse_args(argv)
    handlers = {"start": start, "stop": stop, "status": status}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
