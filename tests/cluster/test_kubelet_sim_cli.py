"""The simulator's command line: node specs and usage files."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.cluster.kubelet_sim.__main__ import load_usage, parse_node

Mi = 2**20


def test_node_specs_become_register_node_arguments() -> None:
    assert parse_node("node-1:cpu=4,memory=8Gi,pods=20") == {
        "name": "node-1",
        "cpu": "4",
        "memory": "8Gi",
        "pods": 20,
    }
    assert parse_node("bare") == {"name": "bare"}
    with pytest.raises(argparse.ArgumentTypeError):
        parse_node("node-1:gpu=1")


def test_usage_files_accept_quantities_and_patterns(tmp_path: Path) -> None:
    usage = tmp_path / "usage.yaml"
    usage.write_text(
        "- {namespace: shop, pod: 'web-*', container: app,\n"
        "   cpu: [0.2, 0.4], memory: [200Mi, 1Gi], step: 30, repeat: true}\n"
    )
    [(namespace, pod, container, series)] = load_usage(usage)
    assert (namespace, pod, container) == ("shop", "web-*", "app")
    assert series.at(0) == (0.2, 200 * Mi)
    assert series.at(31) == (0.4, 1024 * Mi)
    assert series.at(61) == (0.2, 200 * Mi)  # repeats
