"""`tailor follow` never resizes a pod more often than its change budget, counted on the
pod itself, so a new updater process (each `--once` here) knows what was spent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tailor.api.vpa import VerticalPodAutoscaler
from tailor.change_budget import BudgetError, changes_per_day
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kubelet_sim import KubeletSimulator
from tests.cluster.podtools import applied_requests, get_pod, pod_manifest, wait_for_pod
from tests.cluster.rawapi import Json, RawApi
from tests.cluster.workloads import Mi, vpa
from tests.updater.following import follow, start, write_schedule
from updater.act import budget_of
from updater.budget import RESIZED_AT, recorded, refusal, resized_at
from updater.follow import PassOptions
from updater.governance import Governance
from updater.plan import PodRules


def _row(namespace: str, start: datetime, cpu: float) -> Json:
    def stamp(moment: datetime) -> str:
        return moment.isoformat().replace("+00:00", "Z")

    return {
        "namespace": namespace,
        "workload": "web",
        "container": "app",
        "start": stamp(start),
        "end": stamp(start + timedelta(hours=1)),
        "cpu": cpu,
        "memory": 128 * Mi,
        "memoryLimit": 128 * Mi,
    }


def _at(moment: datetime) -> str:
    return moment.isoformat()


def test_a_pod_is_not_resized_past_its_budget_across_updater_restarts(
    kube_api: RawApi,
    kube_cluster: ControlPlane,
    kubelet_sim: KubeletSimulator,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    node = f"budget-{kube_namespace}"
    kubelet_sim.register_node(node, cpu="4", memory="8Gi")
    start(kube_api, kube_namespace, pod_manifest("web", node=node, requests={"cpu": "500m"}))
    now = datetime.now(UTC).replace(microsecond=0, second=0)
    hour = timedelta(hours=1)
    rows = [
        _row(kube_namespace, now - timedelta(minutes=30), 0.75),
        _row(kube_namespace, now + hour, 0.6),
        _row(kube_namespace, now + 2 * hour, 0.9),
        _row(kube_namespace, now + 25 * hour, 0.5),
    ]
    schedule = write_schedule(tmp_path / "schedule.json", rows)
    budget = ("--changes-per-day", "3")  # at most 2 in any 16 h

    def applied(cpu: str) -> None:
        wait_for_pod(
            kube_api, kube_namespace, "web", lambda p: applied_requests(p)["cpu"] == cpu, what=cpu
        )

    minute = timedelta(minutes=1)
    [first] = follow(kube_cluster, schedule, *budget, "--at", _at(now + minute))
    assert (first["action"], first["applied"]) == ("resize", True)
    applied("750m")
    [second] = follow(kube_cluster, schedule, *budget, "--at", _at(now + hour + minute))
    assert second["action"] == "resize", second
    applied("600m")
    pod = get_pod(kube_api, kube_namespace, "web")
    assert len(resized_at(pod)) == 2  # both counted on the pod

    [third] = follow(kube_cluster, schedule, *budget, "--at", _at(now + 2 * hour + minute))
    assert third["action"] == "none"
    assert "change budget spent (2 resizes in the last 24 h, 3 a day)" in third["detail"]
    assert applied_requests(get_pod(kube_api, kube_namespace, "web"))["cpu"] == "600m"

    # a day later the old resizes have left every span: the budget is there again
    [later] = follow(kube_cluster, schedule, *budget, "--at", _at(now + 25 * hour + minute))
    assert later["action"] == "resize", later
    applied("500m")
    times = resized_at(get_pod(kube_api, kube_namespace, "web"))
    assert times == [(now + 25 * hour + minute).timestamp()]  # older ones dropped


def test_the_budget_rule_and_the_recorded_times() -> None:
    now = datetime(2026, 1, 2, 12, tzinfo=UTC)
    hours = [(now - timedelta(hours=h)).timestamp() for h in (1, 3)]
    assert refusal(hours, now, 6) is None
    said = refusal(hours, now, 3)  # 2 of 3 a day are 2 in 16 h
    assert said is not None and "next at 01:00 UTC" in said  # when the 3 h old one is 16 h old
    assert refusal([(now - timedelta(hours=20)).timestamp()], now, 1) is not None
    assert refusal([(now - timedelta(hours=25)).timestamp()], now, 1) is None
    assert recorded([*hours, 0.0], now).split() == [
        f"{hours[1]:.0f}",
        f"{hours[0]:.0f}",
        f"{now.timestamp():.0f}",
    ]
    pod = {"metadata": {"annotations": {RESIZED_AT: "12 x nan 7,9"}}}
    assert resized_at(pod) == [7.0, 9.0, 12.0]
    assert resized_at({"metadata": {}}) == []
    assert changes_per_day(" 12 ") == 12
    for bad in ("0", "six", "-1", "1.5"):
        with pytest.raises(BudgetError):
            changes_per_day(bad)


def test_a_vpa_annotation_sets_its_pods_budget() -> None:
    document = vpa("web", "web", mode="InPlaceOrRecreate")
    document["metadata"]["namespace"] = "ns"
    document["metadata"]["annotations"] = {"kube-tailor.io/changes-per-day": "12"}
    annotated = VerticalPodAutoscaler.from_api(document)
    options = PassOptions(changes_per_day=6)
    assert budget_of(Governance(PodRules(), vpa=annotated), options) == 12
    assert budget_of(Governance(PodRules()), options) == 6
    document["metadata"]["annotations"] = {"kube-tailor.io/changes-per-day": "lots"}
    broken = VerticalPodAutoscaler.from_api(document)
    with pytest.raises(BudgetError):
        budget_of(Governance(PodRules(), vpa=broken), options)
