"""Upstream's updater rules for when a pod follows its VPA's recommendation (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tailor.api.limitrange import LimitRangeItem
from tailor.api.vpa import VerticalPodAutoscaler
from updater.due_targets import Target, without_contested
from updater.plan import PodRules
from updater.recommendations import (
    UpdateRules,
    processed_recommendation,
    quick_oom_threshold,
    recommended_targets,
    update_reason,
)
from updater.resources import Json

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


def vpa(target: str = "500m", lower: str = "400m", upper: str = "800m") -> VerticalPodAutoscaler:
    item = {
        "containerName": "app",
        "target": {"cpu": target, "memory": "256Mi"},
        "lowerBound": {"cpu": lower, "memory": "200Mi"},
        "upperBound": {"cpu": upper, "memory": "1Gi"},
    }
    return VerticalPodAutoscaler.from_api(
        {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
            "status": {"recommendation": {"containerRecommendations": [item]}},
        }
    )


def pod(cpu: str, age: timedelta = timedelta(hours=1), **status: Any) -> Json:
    started = (NOW - age).isoformat().replace("+00:00", "Z")
    requests = {"cpu": cpu, "memory": "256Mi"}
    return {
        "spec": {"containers": [{"name": "app", "resources": {"requests": requests}}]},
        "status": {"startTime": started, **status},
    }


def test_the_targets_are_the_recommendations_with_limits_left_to_follow() -> None:
    [(name, target)] = recommended_targets(processed_recommendation(vpa(), pod("450m"))).items()
    assert name == "app"
    assert (target.cpu_cores, target.memory_bytes, target.memory_limit_bytes) == (
        0.5,
        256 * 2**20,
        None,
    )


def test_a_request_outside_the_bounds_is_updated_and_one_inside_is_left() -> None:
    assert update_reason(pod("300m"), vpa(), NOW) == (
        "app cpu request below the recommendation's lowerBound"
    )
    assert update_reason(pod("900m"), vpa(), NOW) == (
        "app cpu request above the recommendation's upperBound"
    )
    assert update_reason(pod("450m"), vpa(), NOW) is None  # young, within the bounds


def test_a_long_lived_pod_is_updated_once_ten_percent_off() -> None:
    old = timedelta(hours=13)
    assert (
        update_reason(pod("450m", old), vpa(), NOW) == "up 13:00:00 and 11% off its recommendation"
    )
    assert update_reason(pod("460m", old), vpa(), NOW) is None  # 9 % off
    assert update_reason(pod("450m", timedelta(hours=11)), vpa(), NOW) is None
    # upstream's --in-recommendation-bounds-eviction-lifetime-threshold, --pod-update-threshold
    sooner = UpdateRules(long_lived=timedelta(hours=10), min_change=0.05)
    assert update_reason(pod("460m", timedelta(hours=11)), vpa(), NOW, rules=sooner) == (
        "up 11:00:00 and 9% off its recommendation"
    )
    assert update_reason(pod("480m", timedelta(hours=11)), vpa(), NOW, rules=sooner) is None


def test_a_container_oom_killed_soon_after_starting_is_updated() -> None:
    def killed(ran: timedelta) -> dict[str, Any]:
        finished = NOW - timedelta(minutes=1)
        terminated = {
            "reason": "OOMKilled",
            "startedAt": (finished - ran).isoformat(),
            "finishedAt": finished.isoformat(),
        }
        return {"containerStatuses": [{"name": "app", "lastState": {"terminated": terminated}}]}

    assert update_reason(pod("450m", **killed(timedelta(minutes=3))), vpa(), NOW) == (
        "app OOM-killed after running 0:03:00"
    )
    assert update_reason(pod("450m", **killed(timedelta(minutes=30))), vpa(), NOW) is None
    # the VPA's own threshold (upstream's AEP-8026 updatePolicy.evictAfterOOMSeconds)
    patient = vpa().to_api()
    patient["spec"]["updatePolicy"] = {
        "updateMode": "InPlaceOrRecreate",
        "evictAfterOOMSeconds": 3600,
    }
    late = VerticalPodAutoscaler.from_api(patient)
    assert quick_oom_threshold(late) == timedelta(hours=1)
    assert update_reason(pod("450m", **killed(timedelta(minutes=30))), late, NOW) == (
        "app OOM-killed after running 0:30:00"
    )
    patient["spec"]["updatePolicy"]["evictAfterOOMSeconds"] = 60
    eager = VerticalPodAutoscaler.from_api(patient)
    assert update_reason(pod("450m", **killed(timedelta(minutes=3))), eager, NOW) is None
    # --evict-after-oom-threshold sets the default; a VPA's own still wins
    hour = UpdateRules(quick_oom=timedelta(hours=1))
    assert update_reason(pod("450m", **killed(timedelta(minutes=30))), vpa(), NOW, rules=hour)
    assert (
        update_reason(pod("450m", **killed(timedelta(minutes=3))), eager, NOW, rules=hour) is None
    )


def test_without_a_recommendation_there_is_nothing_to_follow() -> None:
    bare = VerticalPodAutoscaler.from_api({**vpa().to_api(), "status": {}})
    assert recommended_targets(processed_recommendation(bare, pod("450m"))) == {}
    assert update_reason(pod("450m"), bare, NOW) is None


def cpu_is_the_hpas(container: str) -> frozenset[str]:
    return frozenset({"cpu"})


def memory_is_the_hpas(container: str) -> frozenset[str]:
    return frozenset({"memory"})


def test_what_an_hpa_scales_on_is_no_reason_to_update() -> None:
    targets = without_contested(
        recommended_targets(processed_recommendation(vpa(), pod("450m"))), cpu_is_the_hpas
    )
    assert update_reason(pod("300m"), vpa(), NOW, targets, cpu_is_the_hpas) is None
    old = timedelta(hours=13)  # 40 % off in cpu alone: memory is on target
    assert update_reason(pod("300m", old), vpa(), NOW, targets, cpu_is_the_hpas) is None
    terminated = {
        "reason": "OOMKilled",
        "startedAt": (NOW - timedelta(minutes=4)).isoformat(),
        "finishedAt": (NOW - timedelta(minutes=1)).isoformat(),
    }
    killed: dict[str, Any] = {
        "containerStatuses": [{"name": "app", "lastState": {"terminated": terminated}}]
    }
    assert update_reason(pod("450m", **killed), vpa(), NOW, None, memory_is_the_hpas) is None
    assert update_reason(pod("450m", **killed), vpa(), NOW, None, cpu_is_the_hpas) == (
        "app OOM-killed after running 0:03:00"
    )


def test_without_contested_keeps_the_other_resource_and_drops_a_container_left_nothing() -> None:
    both = {"app": Target(0.5, 256.0, 512.0), "sidecar": Target(0.1, 64.0, None)}
    taken = {"app": frozenset({"cpu"}), "sidecar": frozenset({"cpu", "memory"})}
    assert without_contested(both, lambda name: taken[name]) == {"app": Target(None, 256.0, 512.0)}
    memory = without_contested(both, memory_is_the_hpas)
    assert memory == {"app": Target(0.5, None, None), "sidecar": Target(0.1, None, None)}


def oom_killed_after(minutes: int) -> dict[str, Any]:
    terminated = {
        "reason": "OOMKilled",
        "startedAt": (NOW - timedelta(minutes=minutes + 1)).isoformat(),
        "finishedAt": (NOW - timedelta(minutes=1)).isoformat(),
    }
    return {"containerStatuses": [{"name": "app", "lastState": {"terminated": terminated}}]}


def test_a_quick_oom_is_no_reason_when_nothing_would_change_or_the_container_is_off() -> None:
    """Upstream's rule: the replacement would be the same pod, killed and evicted again."""
    assert update_reason(pod("500m", **oom_killed_after(3)), vpa(), NOW) is None  # on target
    assert update_reason(pod("450m", **oom_killed_after(3)), vpa(), NOW) is not None
    off = vpa().to_api()
    off["spec"]["resourcePolicy"] = {"containerPolicies": [{"containerName": "app", "mode": "Off"}]}
    assert (
        update_reason(pod("450m", **oom_killed_after(3)), VerticalPodAutoscaler.from_api(off), NOW)
        is None
    )


def test_the_bounds_are_judged_after_the_caps_a_pod_is_held_to() -> None:
    """A pod at its maxAllowed is not 'below lowerBound' forever: the cap holds both."""
    high = vpa(target="3", lower="2", upper="4")
    assert update_reason(pod("1"), high, NOW) == (
        "app cpu request below the recommendation's lowerBound"
    )
    document = high.to_api()
    policy = {"containerName": "app", "maxAllowed": {"cpu": "1"}}
    document["spec"]["resourcePolicy"] = {"containerPolicies": [policy]}
    held = VerticalPodAutoscaler.from_api(document)
    assert update_reason(pod("1"), held, NOW) is None
    [target] = recommended_targets(processed_recommendation(held, pod("1"))).values()
    assert target.cpu_cores == 1.0
    assert update_reason(pod("700m"), held, NOW) == (
        "app cpu request below the recommendation's lowerBound"
    )
    # a LimitRange the caller passes caps the same way
    ceiling = LimitRangeItem.model_validate({"type": "Container", "max": {"cpu": "1"}})
    limited = pod("1")
    limited["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "1"}
    assert update_reason(limited, high, NOW) is not None
    assert (
        update_reason(limited, high, NOW, pod_rules=PodRules(container_limit_range=ceiling)) is None
    )


def as_sidecar(found: Json) -> Json:
    """The same pod with its container moved to a native sidecar (restartPolicy Always)."""
    [app] = found["spec"]["containers"]
    spec = {
        "containers": [{"name": "main"}],
        "initContainers": [{**app, "restartPolicy": "Always"}],
    }
    statuses = found["status"].get("containerStatuses")
    status = {k: v for k, v in found["status"].items() if k != "containerStatuses"}
    return {"spec": spec, "status": {**status, "initContainerStatuses": statuses or []}}


def test_a_native_sidecar_is_judged_as_an_app_container_and_a_plain_init_one_is_not() -> None:
    assert update_reason(as_sidecar(pod("300m")), vpa(), NOW) == (
        "app cpu request below the recommendation's lowerBound"
    )
    killed = {
        "name": "app",
        "lastState": {
            "terminated": {
                "reason": "OOMKilled",
                "startedAt": "2026-11-23T11:55:00Z",
                "finishedAt": "2026-11-23T11:58:00Z",
            }
        },
    }
    quick = as_sidecar(pod("450m", containerStatuses=[killed]))
    assert update_reason(quick, vpa(), NOW) == "app OOM-killed after running 0:03:00"
    plain = as_sidecar(pod("300m"))
    del plain["spec"]["initContainers"][0]["restartPolicy"]
    assert update_reason(plain, vpa(), NOW) is None
