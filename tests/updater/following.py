"""Running `tailor follow --once` in tests: schedule rows in force now, bare pods, the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tailor.cli.main import app
from tailor.kube import api_client_from
from tailor.lease import ApiLease
from tailor.status_lease import STATUS_LEASE, StatusHeartbeat
from tests.cluster.controlplane import ControlPlane
from tests.cluster.fixtures import FullNamespace
from tests.cluster.podtools import create_pod, get_pod, wait_for_pod
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import create_deployment, deployment, wait_for_running

# These tests run no webhook: where eviction is not what a test is about, it evicts anyway.
NO_WEBHOOK = "--no-use-admission-controller-status"


def webhook_renewed(cluster: ControlPlane, namespace: str) -> str:
    """Renew the webhook's status Lease in `namespace`, as a serving `tailor admission` does
    every 10 s; returns the flag that points `tailor follow` at it."""
    lease = ApiLease(api_client_from(cluster.kubeconfig), namespace, STATUS_LEASE)
    assert StatusHeartbeat(lease, "test-webhook").beat()
    return f"--admission-status-lease={namespace}/{STATUS_LEASE}"


def period(namespace: str, workload: str, cpu: float, memory: float, **extra: Any) -> Json:
    """One schedule row in force now, as `tailor schedule --format json` writes it."""
    now = datetime.now(UTC).replace(microsecond=0)
    return {
        "namespace": namespace,
        "workload": workload,
        "container": "app",
        "start": (now - timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
        "end": (now + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
        "cpu": cpu,
        "memory": memory,
        "memoryLimit": extra.get("memory_limit", memory),
    }


def follow(
    cluster: ControlPlane, schedule: Path, *flags: str, kubeconfig: Path | None = None
) -> list[Json]:
    """One pass's outcomes (JSON), as cluster admin unless `kubeconfig` says otherwise."""
    config = kubeconfig or cluster.kubeconfig
    args = ["follow", "--once", "--format", "json", "--schedule", str(schedule)]
    result = CliRunner().invoke(app, [*args, "--kubeconfig", str(config), *flags])
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout))


def write_schedule(path: Path, rows: list[Json]) -> Path:
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def start(api: RawApi, namespace: str, manifest: Json) -> Json:
    """Create a bare pod and wait until the simulated kubelet runs it."""
    create_pod(api, namespace, manifest)
    name = manifest["metadata"]["name"]
    return wait_for_pod(
        api, namespace, name, lambda p: p["status"].get("phase") == "Running", what="Running"
    )


PINNED = {"cpu": "1", "memory": "128Mi"}  # Guaranteed: beside the static CPU manager, stuck


def pinned_deployment(full_namespace: FullNamespace, prefix: str, replicas: int) -> list[Json]:
    """Deployment `web` of Guaranteed pods on a node whose static CPU manager refuses every
    CPU resize (Infeasible); its running pods."""
    api, namespace = full_namespace.api, full_namespace.name
    node = f"{prefix}-{namespace}"
    full_namespace.sim.register_node(
        node, cpu="8", memory="8Gi", cpu_manager_policy="static", labels={"tailor-test": node}
    )
    web = deployment("web", node, {"requests": PINNED, "limits": PINNED})
    web["spec"]["replicas"] = replicas
    create_deployment(api, namespace, web)
    return wait_for_running(api, namespace, replicas)


def wait_until_infeasible(api: RawApi, namespace: str, pods: list[Json]) -> None:
    """Until the kubelet has answered every pod's resize with PodResizePending."""

    def pending(pod: Json) -> bool:
        found = get_pod(api, namespace, pod["metadata"]["name"])
        return any(c["type"] == "PodResizePending" for c in found["status"].get("conditions") or [])

    wait_until(lambda: all(pending(p) for p in pods), what="Infeasible resizes")
