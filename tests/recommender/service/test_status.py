"""Which VPAs the service writes, and what: pure, on hand-made objects."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from recommender.forecast.settings import ForecastSettings
from recommender.service.policies import (
    FORECAST_SET_ANNOTATION,
    annotated_pairs,
    oom_bumps,
    settings_groups,
)
from recommender.service.status import (
    ROW_COLUMNS,
    OwnSettings,
    ServedVpa,
    container_recommendations,
    merged_status,
    served_vpas,
    vpa_status,
)
from tailor.api.meta import ResourceList
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.hpa import HpaConflict

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
DEPLOYMENT_RS = {("shop", "web-5d8f7c9b6d"): {"metadata": {"ownerReferences": [
    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "1", "controller": True}
]}}}  # fmt: skip


def vpa(name: str, target: str = "web", created: str = "2026-01-01T00:00:00Z", **spec: Any) -> Any:
    return VerticalPodAutoscaler.from_api(
        {
            "metadata": {"name": name, "namespace": "shop", "creationTimestamp": created},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                **spec,
            },
        }
    )


def pod(name: str = "web-5d8f7c9b6d-abcde", phase: str = "Running", *containers: str) -> Any:
    owner: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "uid": "2"}
    owner.update(name="web-5d8f7c9b6d", controller=True)
    return {
        "metadata": {"name": name, "namespace": "shop", "ownerReferences": [owner]},
        "spec": {"containers": [{"name": c} for c in containers or ("app",)]},
        "status": {"phase": phase},
    }


def rows(**values: float | str) -> pd.DataFrame:
    base = {"namespace": "shop", "workload": "web", "container": "app"}
    bounds = {f"{r}_{b}": np.nan for r in ("cpu", "memory") for b in ("target", "lower", "upper")}
    return pd.DataFrame([{**base, **bounds, **values}])


def recommended(name: str, target: str = "web") -> Any:
    """A VPA that already carries a recommendation from an earlier pass."""
    document = vpa(name, target).to_api()
    item = {"containerName": "app", "target": {"cpu": "300m"}}
    document["status"] = {"recommendation": {"containerRecommendations": [item]}}
    return VerticalPodAutoscaler.from_api(document)


def test_a_recommendation_is_kept_when_a_pass_has_nothing_to_replace_it() -> None:
    """Scaled to zero, or no history read this pass: the merge keeps what the next pod gets."""
    [idle] = served_vpas([recommended("idle", "ghost")], [], {}, "default", True)
    scaled_to_zero = vpa_status(idle, pd.DataFrame(columns=ROW_COLUMNS), NOW)
    assert "recommendation" not in scaled_to_zero  # a merge patch leaves it as it is
    assert {c["type"]: c["status"] for c in scaled_to_zero["conditions"]} == {
        "RecommendationProvided": "True",
        "NoPodsMatched": "True",
    }
    [served] = served_vpas([recommended("web")], [pod()], DEPLOYMENT_RS, "default", True)
    no_history = vpa_status(served, pd.DataFrame(columns=ROW_COLUMNS), NOW)
    assert "recommendation" not in no_history
    assert no_history["conditions"][0]["message"].startswith("no usage history read")
    fresh = vpa_status(served, rows(cpu_target=0.25), NOW)
    [item] = fresh["recommendation"]["containerRecommendations"]
    assert item["target"] == {"cpu": "250m"}


def test_a_vpa_naming_us_is_served_and_sees_its_pods_workload_and_containers() -> None:
    [entry] = served_vpas([vpa("web", recommenders=[{"name": "kube-tailor"}])],
                          [pod("web-5d8f7c9b6d-abcde", "Running", "app", "envoy")],
                          DEPLOYMENT_RS, "kube-tailor", False)  # fmt: skip
    assert entry.workloads == {"web"} and entry.containers == {"app", "envoy"}


def test_a_native_sidecar_is_recommended_for_and_a_plain_init_container_is_not() -> None:
    running = pod("web-5d8f7c9b6d-abcde", "Running", "app")
    running["spec"]["initContainers"] = [
        {"name": "setup"},
        {"name": "proxy", "restartPolicy": "Always"},
    ]
    [entry] = served_vpas([vpa("web", recommenders=[{"name": "kube-tailor"}])], [running],
                          DEPLOYMENT_RS, "kube-tailor", False)  # fmt: skip
    assert entry.containers == {"app", "proxy"}


def test_vpas_of_other_recommenders_and_unnamed_ones_are_left_unless_default() -> None:
    others = [vpa("a", recommenders=[{"name": "someone"}]), vpa("b", target="api")]
    assert [e.vpa.name for e in served_vpas(others, [], {}, "kube-tailor", False)] == []
    assert [e.vpa.name for e in served_vpas(others, [], {}, "kube-tailor", True)] == ["b"]


def test_only_the_oldest_matching_vpa_gets_the_pods_and_finished_pods_count_for_none() -> None:
    old = vpa("old", created="2026-01-01T00:00:00Z")
    young = vpa("young", created="2026-02-01T00:00:00Z")
    entries = served_vpas([young, old], [pod()], DEPLOYMENT_RS, "default", True)
    assert {e.vpa.name: e.workloads for e in entries} == {"old": {"web"}, "young": set()}
    finished = served_vpas([old], [pod(phase="Succeeded")], DEPLOYMENT_RS, "default", True)
    assert finished[0].workloads == set()


def test_recommendations_take_the_rows_of_the_pods_clamped_and_skip_unmeasured_memory() -> None:
    policy = {"containerPolicies": [{"containerName": "*", "maxAllowed": {"cpu": "500m"}}]}
    [entry] = served_vpas([vpa("web", resourcePolicy=policy)], [pod()], DEPLOYMENT_RS, "d", True)
    frame = rows(cpu_target=0.8, cpu_lower=0.3, cpu_upper=1.2)
    [written] = container_recommendations(entry, frame)
    assert written.target == ResourceList({"cpu": "500m"})  # memory NaN: not measured
    assert written.uncapped_target == ResourceList({"cpu": "800m"})
    assert written.lower_bound == ResourceList({"cpu": "300m"})
    other_namespace = frame.assign(namespace="elsewhere")
    assert container_recommendations(entry, other_namespace) == []


def test_statuses_say_why_there_is_no_recommendation() -> None:
    [served] = served_vpas([vpa("web")], [pod()], DEPLOYMENT_RS, "default", True)
    [empty] = served_vpas([vpa("idle", target="ghost")], [], {}, "default", True)
    lonely = vpa_status(empty, rows(), NOW)
    assert lonely["recommendation"] is None
    assert {c["type"]: c["status"] for c in lonely["conditions"]} == {
        "RecommendationProvided": "False",
        "NoPodsMatched": "True",
    }
    unmeasured = vpa_status(served, rows(), NOW)
    assert unmeasured["recommendation"] is None
    assert unmeasured["conditions"][0]["status"] == "False"
    status = vpa_status(served, rows(cpu_target=0.25, memory_target=2.0**28), NOW)
    [item] = status["recommendation"]["containerRecommendations"]
    assert item["target"] == {"cpu": "250m", "memory": "268435456"}
    assert status["conditions"][0] == {
        "type": "RecommendationProvided",
        "status": "True",
        "lastTransitionTime": "2026-11-23T12:00:00Z",
    }


def test_the_forecast_says_why_in_the_recommendation_condition_and_upstreams_model_not() -> None:
    [served] = served_vpas(
        [vpa("web")], [pod("web-5d8f7c9b6d-abcde", "Running", "app", "envoy")],
        DEPLOYMENT_RS, "default", True,
    )  # fmt: skip
    frame = pd.concat(
        [
            rows(cpu_target=0.25, explanation="cpu: daily cycle, serving"),
            rows(cpu_target=0.1, explanation="cpu: stationary, batch").assign(container="envoy"),
            rows(cpu_target=0.3, explanation="cpu: other").assign(container="unseen"),
            rows(cpu_target=0.2, explanation="cpu: no cycle, serving").assign(workload="api"),
        ]
    )
    [provided, _] = vpa_status(served, frame, NOW)["conditions"]
    assert provided["status"] == "True"
    assert provided["message"] == "app: cpu: daily cycle, serving; envoy: cpu: stationary, batch"

    long = frame.assign(explanation="x" * 5000)
    [provided, _] = vpa_status(served, long, NOW)["conditions"]
    assert len(provided["message"]) == 4000 and provided["message"].endswith("…")

    upstream = frame.drop(columns="explanation")
    [provided, _] = vpa_status(served, upstream, NOW)["conditions"]
    assert "message" not in provided


def test_a_condition_keeps_its_transition_time_until_its_status_changes() -> None:
    earlier = "2026-11-20T08:00:00Z"
    status = {"conditions": [
        {"type": "RecommendationProvided", "status": "True", "lastTransitionTime": earlier},
        {"type": "NoPodsMatched", "status": "True", "lastTransitionTime": earlier},
    ]}  # fmt: skip
    with_status = VerticalPodAutoscaler.from_api({**vpa("web").to_api(), "status": status})
    [served] = served_vpas([with_status], [pod()], DEPLOYMENT_RS, "default", True)
    conditions = vpa_status(served, rows(cpu_target=0.25), NOW)["conditions"]
    assert {c["type"]: c["lastTransitionTime"] for c in conditions} == {
        "RecommendationProvided": earlier,  # still True: unchanged since then
        "NoPodsMatched": "2026-11-23T12:00:00Z",  # True -> False now
    }


def test_an_hpa_conflict_is_a_condition_beside_the_recommendation() -> None:
    earlier = "2026-11-20T08:00:00Z"
    before = {"conditions": [
        {"type": "HorizontalAutoscalerConflict", "status": "True", "lastTransitionTime": earlier},
    ]}  # fmt: skip
    web = VerticalPodAutoscaler.from_api({**vpa("web").to_api(), "status": before})
    [served] = served_vpas([web], [pod()], DEPLOYMENT_RS, "default", True)
    fight = [HpaConflict("web", "Resource", "cpu"), HpaConflict("web", "Resource", "memory")]
    status = vpa_status(served, rows(cpu_target=0.25), NOW, fight)
    assert status["recommendation"]["containerRecommendations"]  # still recommended
    conflict = {c["type"]: c for c in status["conditions"]}["HorizontalAutoscalerConflict"]
    assert conflict == {
        "type": "HorizontalAutoscalerConflict",
        "status": "True",
        "lastTransitionTime": earlier,  # True before and now: unchanged
        "message": "HPA web scales on cpu (Resource metric); "
        "HPA web scales on memory (Resource metric)",
    }
    resolved = vpa_status(served, rows(cpu_target=0.25), NOW, [])
    conflict = {c["type"]: c for c in resolved["conditions"]}["HorizontalAutoscalerConflict"]
    assert conflict == {
        "type": "HorizontalAutoscalerConflict",
        "status": "False",
        "lastTransitionTime": "2026-11-23T12:00:00Z",
    }
    [empty] = served_vpas([vpa("idle", target="ghost")], [], {}, "default", True)
    lonely = vpa_status(empty, rows(), NOW, fight[:1])
    assert [c["type"] for c in lonely["conditions"]][-1] == "HorizontalAutoscalerConflict"


def test_unread_hpas_leave_the_condition_out() -> None:
    [served] = served_vpas([vpa("web")], [pod()], DEPLOYMENT_RS, "default", True)
    conditions = vpa_status(served, rows(cpu_target=0.25), NOW, None)["conditions"]
    assert [c["type"] for c in conditions] == ["RecommendationProvided", "NoPodsMatched"]


def test_a_vpas_own_oom_bumps_reach_the_model_per_container() -> None:
    """The container's own policy wins over "*"; unset fields stay NaN (the flags')."""
    policies = [
        {"containerName": "*", "oomBumpUpRatio": "1.5", "oomMinBumpUp": "200Mi"},
        {"containerName": "envoy", "oomMinBumpUp": "0"},
        {"containerName": "plain"},
    ]
    served = served_vpas(
        [vpa("web", recommenders=[{"name": "kube-tailor"}],
             resourcePolicy={"containerPolicies": policies})],
        [pod("web-5d8f7c9b6d-abcde", "Running", "app", "envoy", "plain")],
        DEPLOYMENT_RS, "kube-tailor", False,
    )  # fmt: skip
    table = oom_bumps(served)
    assert table is not None
    got = {str(row["container"]): row for row in table.to_dict(orient="records")}
    assert got["app"]["oom_bump_ratio"] == 1.5 and got["app"]["oom_min_bump"] == 200 * 2**20
    assert math.isnan(got["envoy"]["oom_bump_ratio"]) and got["envoy"]["oom_min_bump"] == 0
    assert "plain" not in got  # its own policy sets neither: the flags apply
    assert set(table["workload"]) == {"web"}
    bare = served_vpas([vpa("web", recommenders=[{"name": "kube-tailor"}])],
                       [pod()], DEPLOYMENT_RS, "kube-tailor", False)  # fmt: skip
    assert oom_bumps(bare) is None


def _annotated(name: str, target: str, text: str | None) -> Any:
    found = vpa(name, target, recommenders=[{"name": "kube-tailor"}])
    document = found.to_api()
    if text is not None:
        document["metadata"]["annotations"] = {FORECAST_SET_ANNOTATION: text}
    return VerticalPodAutoscaler.from_api(document)


def test_vpas_are_grouped_by_the_settings_their_annotation_asks_for() -> None:
    base = ForecastSettings()
    entries = [
        ServedVpa(_annotated("web", "web", None)),
        ServedVpa(_annotated("api", "api", "cpu_shortfall_mode=fixed; target_cpu_shortfall=0.02")),
        ServedVpa(_annotated("db", "db", "target_cpu_shortfall=0.02\ncpu_shortfall_mode=fixed")),
        ServedVpa(_annotated("same", "same", "target_cpu_shortfall=0.005")),  # the default
        ServedVpa(_annotated("typo", "typo", "target_cpu_shortfal=0.02")),
    ]
    groups, own = settings_groups(entries, base, FORECAST_SET_ANNOTATION, "forecast")
    named = {settings: sorted(e.vpa.name for e in group) for settings, group in groups.items()}
    strict = replace(base, cpu_shortfall_mode="fixed", target_cpu_shortfall=0.02)
    assert named == {base: ["same", "web"], strict: ["api", "db"]}
    assert ("shop", "web") not in own and own[("shop", "api")].problem is None
    problem = own[("shop", "typo")].problem or ""
    assert problem.startswith(f"{FORECAST_SET_ANNOTATION}: unknown forecast setting")
    assert "did you mean target_cpu_shortfall" in problem
    # a tuple's commas stay inside its value
    pairs = annotated_pairs(_annotated("t", "t", "a=1,2; b=3\n c=4"), FORECAST_SET_ANNOTATION)
    assert pairs == ["a=1,2", "b=3", "c=4"]


def test_an_unreadable_annotation_keeps_the_recommendation_and_says_why() -> None:
    before = vpa("web", recommenders=[{"name": "kube-tailor"}]).to_api()
    before["status"] = {
        "recommendation": {"containerRecommendations": [{"containerName": "app",
                                                         "target": {"cpu": "1"}}]},
        "conditions": [
            {"type": "RecommendationProvided", "status": "True",
             "lastTransitionTime": "2026-11-01T00:00:00Z"},
            {"type": "LowConfidence", "status": "False",
             "lastTransitionTime": "2026-11-01T00:00:00Z"},
        ],
    }  # fmt: skip
    entry = ServedVpa(VerticalPodAutoscaler.from_api(before), {"web"}, {"app"})
    problem = OwnSettings(FORECAST_SET_ANNOTATION, "kube-tailor.io/forecast-set: unknown ...")
    status = vpa_status(entry, rows(cpu_target=0.5), NOW, None, problem)
    assert "recommendation" not in status  # a merge patch leaves the last one in place
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["ConfigUnsupported"]["status"] == "True"
    assert by_type["ConfigUnsupported"]["message"] == problem.problem
    assert by_type["RecommendationProvided"]["lastTransitionTime"] == "2026-11-01T00:00:00Z"
    assert set(by_type) == {"ConfigUnsupported", "RecommendationProvided", "LowConfidence"}
    fine = vpa_status(entry, rows(cpu_target=0.5), NOW, None, OwnSettings(FORECAST_SET_ANNOTATION))
    by_type = {c["type"]: c for c in fine["conditions"]}
    assert by_type["ConfigUnsupported"]["status"] == "False"
    assert fine["recommendation"]["containerRecommendations"][0]["target"]["cpu"] == "500m"
    plain = vpa_status(entry, rows(cpu_target=0.5), NOW)
    assert "ConfigUnsupported" not in {c["type"] for c in plain["conditions"]}


def test_a_cronjob_runs_pods_are_served_by_the_cronjobs_vpa_under_its_name() -> None:
    """Pod -> Job -> CronJob: the VPA's workload is the CronJob, every run's history."""
    backup = vpa("backup").to_api()
    backup["spec"]["targetRef"] = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "backup"}
    run = pod("backup-29412345-x7k2p")
    run["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "backup-29412345", "uid": "j"}
    ]
    run["metadata"]["ownerReferences"][0]["controller"] = True
    owner: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "backup"}
    owner.update(uid="c", controller=True)
    jobs = {("shop", "backup-29412345"): {"metadata": {"ownerReferences": [owner]}}}
    served = VerticalPodAutoscaler.from_api(backup)
    [entry] = served_vpas([served], [run], {}, "default", True, jobs)
    assert entry.workloads == {"backup"}
    [unmatched] = served_vpas([served], [run], {}, "default", True)  # without the Job
    assert unmatched.workloads == set()


def test_a_status_write_keeps_other_writers_conditions_and_fields() -> None:
    current = {
        "conditions": [
            {"type": "RecommendationProvided", "status": "False"},
            {"type": "ConfigUnsupported", "status": "True", "message": "old"},
            {"type": "example.com/Ready", "status": "True"},
        ],
        "theirs": {"kept": True},
        "recommendation": {"containerRecommendations": []},
    }
    ours = {
        "conditions": [
            {"type": "RecommendationProvided", "status": "True"},
            {"type": "example.com/Ready", "status": "False"},  # a stale copy of theirs
        ],
        "recommendation": None,
    }
    merged = merged_status(current, ours)
    assert merged["theirs"] == {"kept": True} and merged["recommendation"] is None
    # ours replaced (ConfigUnsupported, not said this pass, is cleared), theirs as they are
    assert merged["conditions"] == [
        {"type": "example.com/Ready", "status": "True"},
        {"type": "RecommendationProvided", "status": "True"},
    ]
    assert merged_status(None, ours)["conditions"] == [
        {"type": "RecommendationProvided", "status": "True"}
    ]


def test_pods_with_pod_level_resources_get_their_pod_level_figure_in_a_condition() -> None:
    shared = pod("web-5d8f7c9b6d-abcde", "Running", "app", "side")
    shared["spec"]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    [entry] = served_vpas([vpa("web")], [shared], DEPLOYMENT_RS, "default", True)
    assert entry.pod_level
    frame = pd.concat(
        [
            rows(cpu_target=0.3, memory_target=200 * 2.0**20),
            rows(container="side", cpu_target=0.1),  # memory not measured yet
        ]
    )
    status = vpa_status(entry, frame, NOW)
    assert len(status["recommendation"]["containerRecommendations"]) == 2  # what the API holds
    [condition] = [c for c in status["conditions"] if c["type"] == "PodLevelResources"]
    assert condition["status"] == "True"
    assert (
        "pod-level requests are the sum of the containers' targets, cpu 400m"
        in (condition["message"])
    )
    assert "memory not derived (no target for side)" in condition["message"]
    [plain] = served_vpas([vpa("web")], [pod()], DEPLOYMENT_RS, "default", True)
    assert all(
        c["type"] != "PodLevelResources" for c in vpa_status(plain, frame, NOW)["conditions"]
    )
