"""`tailor follow --vpa`: VPA objects (our CRD, installed in the real API server) decide.

Three Deployments share one schedule: `web`'s VPA asks for InPlaceOrRecreate and
caps CPU, `api`'s VPA is Off, `batch` has none. A LimitRange bounds every
container's memory limit, and the resize must satisfy the API server's own
LimitRanger, not just our reading of it.
"""

from __future__ import annotations

from pathlib import Path

from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.rawapi import Json
from tests.cluster.workloads import (
    Mi,
    create_deployment,
    deployment,
    running_pods,
    vpa,
    vpa_collection,
    wait_for_running,
)
from tests.updater.following import follow, period, write_schedule


def memory_ceiling() -> Json:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "ceiling"},
        "spec": {"limits": [{"type": "Container", "max": {"memory": "300Mi"}}]},
    }


def test_only_pods_whose_vpa_asks_for_in_place_updates_are_resized_within_their_bounds(
    full_namespace: FullNamespace,
    tmp_path: Path,
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    install_crds(api)
    api.create(f"/api/v1/namespaces/{namespace}/limitranges", memory_ceiling())
    node = f"vpa-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    vpas = vpa_collection(namespace)
    cap = {"containerName": "*", "maxAllowed": {"cpu": "600m"}}
    api.create(vpas, vpa("web", "web", mode="InPlaceOrRecreate", policy=cap))
    api.create(vpas, vpa("api", "api", mode="Off"))
    for name in ("web", "api", "batch"):
        create_deployment(api, namespace, deployment(name, node))
    wait_for_running(api, namespace, 3)
    rows = [period(namespace, name, 1.0, 200 * Mi) for name in ("web", "api", "batch")]
    schedule = write_schedule(tmp_path / "s.json", rows)

    outcomes = {o["workload"]: o for o in follow(full_namespace.cluster, schedule, "--vpa")}
    assert outcomes["api"]["action"] == "none"
    assert outcomes["api"]["detail"] == "VPA api has updateMode Off: no in-place updates"
    assert outcomes["batch"]["detail"] == "no VerticalPodAutoscaler controls it"
    web = outcomes["web"]
    assert (web["action"], web["applied"]) == ("resize", True), web
    assert "capped to maxAllowed" in web["detail"]

    pods = {p["metadata"]["labels"]["app"]: p for p in running_pods(api, namespace)}
    resources = pods["web"]["spec"]["containers"][0]["resources"]
    # CPU at the VPA's maxAllowed; memory the plan's request and limit, under the ceiling
    # (a proportional 2x limit would have met it and lowered the request to 150Mi)
    assert resources["requests"] == {"cpu": "600m", "memory": str(200 * Mi)}
    assert resources["limits"] == {"memory": str(200 * Mi)}
    untouched = pods["api"]["spec"]["containers"][0]["resources"]["requests"]
    assert untouched == {"cpu": "250m", "memory": "128Mi"}

    # Without --vpa every scheduled pod follows, still within the LimitRange.
    plain = {o["workload"]: o for o in follow(full_namespace.cluster, schedule)}
    assert plain["batch"]["action"] == "resize" and plain["batch"]["applied"]
    batch = next(
        p for p in running_pods(api, namespace) if p["metadata"]["labels"]["app"] == "batch"
    )
    batch_resources = batch["spec"]["containers"][0]["resources"]
    assert batch_resources["requests"] == {"cpu": "1", "memory": str(200 * Mi)}
    assert batch_resources["limits"] == {"memory": str(200 * Mi)}  # the plan's, under 300Mi
