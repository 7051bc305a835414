"""Run the kubelet simulator from the command line against any API server.

    python -m tests.cluster.kubelet_sim --kubeconfig .cluster/kubeconfig \\
        --node node-1:cpu=4,memory=8Gi --node node-2:cpu=2,memory=4Gi,pods=20 \\
        --metrics-port 9400 --usage usage.yaml

usage.yaml (optional) lists container usage series:

    - {namespace: default, pod: "web-*", container: app,
       cpu: [0.2, 0.4], memory: [200Mi, 260Mi], step: 30, repeat: true}

Runs until SIGTERM / Ctrl-C, then deletes its nodes and their pods (unless
--keep-nodes).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import kubernetes.config
import yaml

from tests.cluster.kubelet_sim.engine import EngineConfig
from tests.cluster.kubelet_sim.quantities import memory_bytes
from tests.cluster.kubelet_sim.simulator import KubeletSimulator
from tests.cluster.kubelet_sim.usage import UsageSeries


def parse_node(text: str) -> dict[str, Any]:
    """'node-1:cpu=4,memory=8Gi,pods=110' -> register_node keyword arguments."""
    name, _, options = text.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"node {text!r} has no name")
    node: dict[str, Any] = {"name": name}
    for item in filter(None, options.split(",")):
        key, _, value = item.partition("=")
        if key not in {"cpu", "memory", "pods", "allocatable_cpu", "allocatable_memory"}:
            raise argparse.ArgumentTypeError(f"unknown node option {key!r} in {text!r}")
        node[key] = int(value) if key == "pods" else value
    return node


def load_usage(path: Path) -> list[tuple[str, str, str, UsageSeries]]:
    """Usage entries from a YAML list (see the module docstring)."""
    entries = []
    for item in yaml.safe_load(path.read_text()) or []:
        series = UsageSeries(
            tuple(float(v) for v in item.get("cpu", [0.0])),
            tuple(memory_bytes(v) for v in item.get("memory", [0])),
            float(item.get("step", 1.0)),
            bool(item.get("repeat", False)),
        )
        entries.append((item["namespace"], item["pod"], item["container"], series))
    return entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.kubelet_sim")
    parser.add_argument("--kubeconfig", required=True, type=Path)
    parser.add_argument("--node", action="append", type=parse_node, default=[])
    parser.add_argument("--metrics-port", type=int, default=None, help="0 picks a free port")
    parser.add_argument("--usage", type=Path, help="YAML file of usage series")
    parser.add_argument("--actuation-delay", type=float, default=0.0)
    parser.add_argument("--keep-nodes", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    client = kubernetes.config.new_client_from_config(
        config_file=str(args.kubeconfig), persist_config=False
    )
    simulator = KubeletSimulator(
        client,
        config=EngineConfig(actuation_delay=args.actuation_delay),
        metrics_port=args.metrics_port,
    ).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        for node in args.node:
            simulator.register_node(**node)
        for namespace, pod, container, series in load_usage(args.usage) if args.usage else []:
            simulator.set_usage(namespace, pod, container, series)
        nodes = ", ".join(n["name"] for n in args.node) or "none"
        print(f"kubelet simulator ready; nodes: {nodes}", flush=True)
        if args.metrics_port is not None:
            print(f"metrics: {simulator.metrics_url}", flush=True)
        stop.wait()
    finally:
        simulator.stop(cleanup=not args.keep_nodes, raise_errors=False)
    for error in simulator.errors:
        print(f"loop error: {error}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
