"""`tailor follow --vpa` leaves what an HPA scales on to the HPA (the real API server).

A Deployment whose VPA asks for InPlaceOrRecreate and whose autoscaling/v2 HPA scales
on CPU utilization: the schedule's memory is applied in place, its CPU is not, and the
outcome says why; with the HPA on memory too there is nothing left to change; with
`--allow-hpa-conflicts` both are resized.
"""

from __future__ import annotations

from pathlib import Path

from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.workloads import (
    Mi,
    create_deployment,
    deployment,
    hpa,
    hpa_collection,
    running_pods,
    vpa,
    vpa_collection,
    wait_for_running,
)
from tests.updater.following import follow, period, write_schedule


def resources(api: RawApi, namespace: str) -> Json:
    [pod] = running_pods(api, namespace)
    return dict(pod["spec"]["containers"][0]["resources"])


def test_cpu_an_hpa_scales_on_is_not_resized_and_memory_is(
    full_namespace: FullNamespace,
    tmp_path: Path,
) -> None:
    api, namespace, sim = full_namespace.api, full_namespace.name, full_namespace.sim
    install_crds(api)
    node = f"hpa-{namespace}"
    sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    api.create(vpa_collection(namespace), vpa("web", "web", mode="InPlaceOrRecreate"))
    hpas = hpa_collection(namespace)
    api.create(hpas, hpa("web", "web", "cpu"))
    create_deployment(api, namespace, deployment("web", node))
    [before] = wait_for_running(api, namespace, 1)
    schedule = write_schedule(
        tmp_path / "s.json", [period(namespace, "web", 1.0, 200 * Mi, memory_limit=None)]
    )

    [outcome] = follow(full_namespace.cluster, schedule, "--vpa")
    assert (outcome["action"], outcome["applied"]) == ("resize", True), outcome
    assert outcome["detail"] == (  # the requests it sends, cpu unchanged
        "app: cpu 250m, memory 209715200; left to the HPA (--allow-hpa-conflicts resizes them): "
        "HPA web scales on cpu (Resource metric)"
    )
    after = resources(api, namespace)
    assert after["requests"] == {"cpu": "250m", "memory": str(200 * Mi)}  # cpu as it was
    assert after["limits"] == {"memory": "400Mi"}  # no memoryLimit planned: in proportion
    [pod] = running_pods(api, namespace)
    assert pod["metadata"]["uid"] == before["metadata"]["uid"]  # in place

    # the HPA on memory too: nothing is left to change, and the pod is left as it is
    api.delete(f"{hpas}/web")
    api.create(hpas, hpa("web", "web", "cpu", "memory"))
    schedule = write_schedule(tmp_path / "s.json", [period(namespace, "web", 1.0, 300 * Mi)])
    [outcome] = follow(full_namespace.cluster, schedule, "--vpa")
    assert outcome["action"] == "none"
    assert outcome["detail"].startswith("nothing to change: all of it is left to the HPA")
    assert "HPA web scales on memory (Resource metric)" in outcome["detail"]
    assert resources(api, namespace)["requests"] == {"cpu": "250m", "memory": str(200 * Mi)}

    # the operator accepts the fight: both follow the schedule
    [outcome] = follow(full_namespace.cluster, schedule, "--vpa", "--allow-hpa-conflicts")
    assert (outcome["action"], outcome["applied"]) == ("resize", True), outcome
    assert "HPA" not in outcome["detail"]
    assert resources(api, namespace)["requests"] == {"cpu": "1", "memory": str(300 * Mi)}
